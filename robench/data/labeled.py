"""`LabeledImages`: the dataset contract every image reader fulfils.

Items are `(image, label)`: image a float tensor (C, H, W) in [0, 1] in pixel space (never
normalised), label an int class index. The runner batches over
`torch.utils.data.Subset(dataset, indices)` with the default collate.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import Dataset

from robench.data.preprocessing import Preprocessing


class LabeledImages(Dataset[tuple[torch.Tensor, int]]):
    """Base class of robench's image datasets; subclasses implement `_load_image`."""

    # The task whose models this data is for (robench/tasks).
    task: str = "image-classification"
    # Layout name: "idx" or "image-folder".
    kind: str = ""
    # Channels of the stored images (1 for grayscale IDX files); None when they vary by file.
    native_channels: int | None = None

    def __init__(
        self,
        *,
        root: Path,
        split: str | None,
        classes: list[str],
        class_index_note: str,
        targets: list[int],
        preprocessing: Preprocessing,
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
        # How images are brought to the model's input size.
        self.preprocessing = preprocessing

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for a dataset of {len(self)} items")
        index %= len(self)
        return self._load_image(index), self.targets[index]

    def _load_image(self, index: int) -> torch.Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        split = f", split={self.split!r}" if self.split else ""
        return (
            f"{type(self).__name__}(root={str(self.root)!r}{split}, items={len(self)}, "
            f"classes={len(self.classes)})"
        )
