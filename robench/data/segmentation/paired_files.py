"""A segmentation dataset of (image file, mask file) pairs: the base every folder layout uses.
How images and masks are read and checked: docs/segmentation-data.md, "Folder layouts".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from robench._core.errors import DataError
from robench.data.image_folder import IMAGE_ERRORS
from robench.data.segmentation.label_maps import IGNORE_INDEX

_INDEX_MODES = frozenset({"1", "L", "P", "I", "I;16"})  # single-channel masks


def identity_lookup() -> np.ndarray:
    """The 256-entry table that keeps every mask value."""
    return np.arange(256, dtype=np.int64)


def reduce_zero_label_lookup() -> np.ndarray:
    """mmsegmentation's reduce_zero_label: 0 -> ignore, v -> v - 1, the ignore index kept."""
    table = np.arange(256, dtype=np.int64) - 1
    table[0] = IGNORE_INDEX
    table[IGNORE_INDEX] = IGNORE_INDEX
    return table


@dataclass(eq=False, repr=False)
class PairedSegmentation(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Images and their label maps, from lists of paired files."""

    root: Path  # the dataset folder given
    kind: str  # the layout's name ("ade20k", "cityscapes", ...)
    split: str | None  # the split read, None for a layout without splits
    pairs: list[tuple[Path, Path]]  # (image file, mask file), in order
    classes: list[str]  # class names; the position is the class index
    # (height, width) images are resized to; None: as stored.
    image_size: tuple[int, int] | None = None
    lookup: np.ndarray = field(default_factory=identity_lookup)  # mask value -> label
    ignore_index: int = field(default=IGNORE_INDEX, init=False)

    def __post_init__(self) -> None:
        self.num_classes = len(self.classes)

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        image_path, mask_path = self.pairs[index]
        image = read_image(image_path, "image")
        mask = read_image(mask_path, "mask")
        if image.size != mask.size:
            raise DataError(
                f"mask {mask_path} is {mask.size[0]}x{mask.size[1]} but its image {image_path} "
                f"is {image.size[0]}x{image.size[1]}; a mask must have its image's size, so "
                "replace or resize the mask."
            )
        return self._image_tensor(image), self._label_map(mask, mask_path)

    def _image_tensor(self, image: Image.Image) -> torch.Tensor:
        image = image.convert("RGB")
        if self.image_size is not None and image.size != self.image_size[::-1]:
            image = image.resize(self.image_size[::-1], Image.Resampling.BILINEAR)
        pixels = torch.from_numpy(np.array(image, dtype=np.uint8))  # (H, W, 3)
        return pixels.permute(2, 0, 1).float().div(255.0)

    def _label_map(self, mask: Image.Image, path: Path) -> torch.Tensor:
        if mask.mode not in _INDEX_MODES:
            raise DataError(
                f"mask {path} is a {mask.mode} image; masks must be single-channel class "
                "indices (an L or palette PNG), so save the indices, not colours."
            )
        values = np.array(mask, dtype=np.int64)
        if values.size and (values.min() < 0 or values.max() > 255):
            raise DataError(
                f"mask {path} holds values outside 0..255; expected class indices 0.."
                f"{self.num_classes - 1} or {IGNORE_INDEX}, so re-save it as an 8-bit mask."
            )
        labels = self.lookup[values]
        bad = (labels >= self.num_classes) & (labels != IGNORE_INDEX)
        if bad.any():
            raise DataError(
                f"mask {path} holds label {int(values[bad][0])}, not one of the "
                f"{self.num_classes} classes (0..{self.num_classes - 1}) nor the ignore index "
                f"{IGNORE_INDEX}; fix the mask or list every class in the dataset's classes."
            )
        return torch.from_numpy(labels)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(kind={self.kind!r}, root={str(self.root)!r}, "
            f"split={self.split!r}, n={len(self)}, classes={self.num_classes})"
        )


def read_image(path: Path, what: str) -> Image.Image:
    """The decoded image file at `path` (`what`: "image" or "mask" in messages)."""
    try:
        image = Image.open(path)
        image.load()
    except IMAGE_ERRORS as exc:
        raise DataError(
            f"cannot read {what} {path} ({exc}); replace the file or remove it and its pair."
        ) from None
    return image
