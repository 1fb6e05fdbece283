"""`LabeledImages`: the dataset contract every image reader fulfils.

Items are `(image, label)` (docs/datasets.md); a DataLoader reads each batch through
`__getitems__`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch.utils.data import Dataset

from robench.data.preprocessing import Preprocessing

if TYPE_CHECKING:
    from robench.data.label_space import LabelSpace


class LabeledImages(Dataset[tuple[torch.Tensor, int]]):
    """Base class of robench's image datasets; subclasses implement `_load_image`."""

    # The task whose models this data is for (robench/tasks).
    task: str = "image-classification"
    # Layout name, a key of robench.data's layout table ("idx", "image-folder", "imagenet-c", ...).
    kind: str = ""
    # Channels of the stored images (1 for grayscale IDX files); None when they vary by file.
    native_channels: int | None = None

    def __init__(
        self,
        *,
        root: Path,
        split: str | None = None,
        classes: list[str],
        class_index_note: str,
        targets: list[int],
        preprocessing: Preprocessing,
        output_classes: tuple[int, ...] | None = None,
        label_space: LabelSpace | None = None,
        preprocessing_note: str | None = None,
    ) -> None:
        # Directory the data was read from.
        self.root = root
        # "test" or "train" for IDX data; None for an image folder (the folder is the split).
        self.split = split
        # Class names; the position in the list is the class index.
        self.classes = classes
        # One sentence for the report: how class indices were assigned.
        self.class_index_note = class_index_note
        # Label of every item, in item order (read without loading any image).
        self.targets = targets
        self.preprocessing = preprocessing
        # Model output index that each label 0..K-1 stands for (ImageNet-A/R: their ImageNet-1k
        # indices); the model's logits are restricted to these columns, in this order, and the
        # argmax is taken among them. None: the labels are the model's output indices.
        self.output_classes = output_classes
        # The label space the labels are positions in (robench.data.label_space); None if none.
        self.label_space = label_space
        # One sentence for the report when images are not brought to the model's input size by
        # the default resize + centre crop; None when they are.
        self.preprocessing_note = preprocessing_note

    def __len__(self) -> int:
        return len(self.targets)

    def _position(self, index: int) -> int:
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for a dataset of {len(self)} items")
        return index % len(self)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        index = self._position(index)
        return self._load_image(index), self.targets[index]

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[torch.Tensor, int]]:
        """The items of `indices`, equal to `[self[i] for i in indices]`; a DataLoader reads
        a batch through it, so a layout may preprocess the batch's images together."""
        chosen = [self._position(index) for index in indices]
        images = self._load_images(chosen)
        return list(zip(images, [self.targets[i] for i in chosen], strict=True))

    def _load_image(self, index: int) -> torch.Tensor:
        raise NotImplementedError

    def _load_images(self, indices: Sequence[int]) -> list[torch.Tensor]:
        """The images of `indices` (in range); layouts that batch their preprocessing
        override it."""
        return [self._load_image(index) for index in indices]

    def __repr__(self) -> str:
        split = f", split={self.split!r}" if self.split else ""
        return (
            f"{type(self).__name__}(root={str(self.root)!r}{split}, items={len(self)}, "
            f"classes={len(self.classes)})"
        )
