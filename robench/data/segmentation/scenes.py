"""Built-in segmentation scenes: Fashion-MNIST garments pasted on textured backgrounds.

How a scene is drawn (seeded by split and index, so any order or subset reads the same
scenes; labels exact) and the class balance: docs/segmentation-data.md, "Built-in fashion
scenes".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from robench._core.errors import DataError
from robench.data.idx import read_idx
from robench.data.idx_dataset import FASHION_MNIST_CLASSES
from robench.data.segmentation.label_maps import IGNORE_INDEX

SCENE_SIZE = 64
GARMENT_THRESHOLD = 0.3  # garment intensity (0..1) above which a pixel is the garment's
DEFAULT_ROOT = Path("/usr/share/datasets/fashion-mnist")
SCENE_CLASSES = ("background", *FASHION_MNIST_CLASSES)
_SPLIT_FILES = {"train": "train", "test": "t10k"}  # split -> Fashion-MNIST file prefix
_SPLIT_SEED = {"train": 1, "test": 2}
_SEED = 0x5CE7E5


class FashionScenes(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Scenes of a split; `__getitem__` returns (image (3, H, W) in [0, 1], labels (64, 64))."""

    def __init__(
        self,
        split: str = "test",
        root: str | Path = DEFAULT_ROOT,
        image_size: tuple[int, int] | None = None,
        length: int | None = None,
    ) -> None:
        if split not in _SPLIT_FILES:
            raise DataError(
                f"fashion scenes have no split {split!r}; expected one of "
                f"{', '.join(map(repr, _SPLIT_FILES))}."
            )
        self.root = Path(root)  # the Fashion-MNIST folder the garments come from
        self.kind = "fashion-scenes"
        self.split = split
        self.classes = list(SCENE_CLASSES)  # background, then Fashion-MNIST's 10 garments
        self.num_classes = len(self.classes)
        self.ignore_index = IGNORE_INDEX  # never used: every pixel has a class
        self.image_size = image_size  # (height, width) images are resized to; None: 64x64
        prefix = _SPLIT_FILES[split]
        self._garments = _read(self.root, f"{prefix}-images-idx3-ubyte")  # (n, 28, 28) uint8
        self._garment_labels = _read(self.root, f"{prefix}-labels-idx1-ubyte")  # (n,)
        self.length = len(self._garments) if length is None else length  # number of scenes

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= index < self.length:
            raise IndexError(f"scene {index} out of range 0..{self.length - 1}")
        image, labels = self.scene(index)
        tensor = torch.from_numpy(image).permute(2, 0, 1).contiguous()  # (3, 64, 64)
        if self.image_size is not None and tuple(self.image_size) != (SCENE_SIZE, SCENE_SIZE):
            pil = Image.fromarray((image * 255).round().astype(np.uint8))
            pil = pil.resize(self.image_size[::-1], Image.Resampling.BILINEAR)
            tensor = torch.from_numpy(np.array(pil)).permute(2, 0, 1).float().div(255.0)
        return tensor, torch.from_numpy(labels)

    def scene(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Scene `index` as numpy: image float32 (64, 64, 3), multiples of 1/255 in [0, 1];
        labels int64 (64, 64)."""
        rng = np.random.default_rng([_SEED, _SPLIT_SEED[self.split], index])
        image = _background(rng)
        labels = np.zeros((SCENE_SIZE, SCENE_SIZE), dtype=np.int64)
        for _ in range(int(rng.integers(1, 4))):
            which = int(rng.integers(0, len(self._garments)))
            side = int(rng.integers(20, 41))
            garment = Image.fromarray(self._garments[which]).resize(
                (side, side), Image.Resampling.BILINEAR
            )
            intensity = np.asarray(garment, dtype=np.float32) / 255.0  # (side, side)
            top, left = (int(v) for v in rng.integers(0, SCENE_SIZE - side + 1, size=2))
            tint = rng.uniform(0.25, 1.0, size=3).astype(np.float32)
            covered = intensity > GARMENT_THRESHOLD
            shade = (0.35 + 0.65 * intensity)[..., None] * tint  # (side, side, 3)
            window = image[top : top + side, left : left + side]
            window[covered] = shade[covered]
            labels[top : top + side, left : left + side][covered] = (
                int(self._garment_labels[which]) + 1
            )
        # 8-bit grey levels, as an image file holds: corruptions work on uint8 pixels, so a
        # corrupted scene then differs from the clean one by the corruption alone.
        return (np.round(image * 255) / 255).astype(np.float32), labels

    def __repr__(self) -> str:
        return f"FashionScenes(split={self.split!r}, n={len(self)}, root={str(self.root)!r})"


def _background(rng: np.random.Generator) -> np.ndarray:
    """A (64, 64, 3) float32 texture in [0, 1]: two tinted gratings and smooth noise."""
    y, x = np.mgrid[0:SCENE_SIZE, 0:SCENE_SIZE].astype(np.float32) / SCENE_SIZE
    texture = np.zeros((SCENE_SIZE, SCENE_SIZE, 3), dtype=np.float32)
    for _ in range(2):
        angle, freq, phase = rng.uniform(0, np.pi), rng.uniform(2, 9), rng.uniform(0, 2 * np.pi)
        wave = np.sin(2 * np.pi * freq * (x * np.cos(angle) + y * np.sin(angle)) + phase)
        texture += 0.18 * wave[..., None] * rng.uniform(0.2, 1.0, size=3).astype(np.float32)
    coarse = rng.uniform(-0.12, 0.12, size=(8, 8, 3)).astype(np.float32)
    # (64, 64, 3): the 8x8 noise upsampled bilinearly, channel by channel.
    size, bilinear = (SCENE_SIZE, SCENE_SIZE), Image.Resampling.BILINEAR
    upsampled = [Image.fromarray(coarse[..., c], mode="F").resize(size, bilinear) for c in range(3)]
    noise = np.stack([np.asarray(channel) for channel in upsampled], axis=-1)
    base = rng.uniform(0.3, 0.7, size=3).astype(np.float32)
    return np.clip(base + texture + noise, 0.0, 1.0).astype(np.float32)


def _read(root: Path, stem: str) -> np.ndarray:
    for name in (stem, f"{stem}.gz"):
        if (root / name).is_file():
            return read_idx(root / name)
    raise DataError(
        f"{root} has no {stem}[.gz]; fashion scenes are built from Fashion-MNIST, so run "
        "`make data` or pass the folder holding its IDX files."
    )
