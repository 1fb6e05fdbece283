"""`SequenceDataset`: what every Long Range Arena reader returns (docs/datasets.md, "Long Range
Arena", lists its items and attributes).

Sequences are kept unpadded and compact (uint8) and padded when an item is read, so ListOps'
96,000 training expressions take 100 MB, not the 1.5 GB of a padded int64 array. Pixel tasks
are never padded (`pad_id` None: 0 is a pixel value).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import torch
from torch.utils.data import Dataset

from robench._core.errors import DataError

# The task whose models read this data (robench/tasks).
SEQUENCE_TASK = "sequence-classification"


class Sequences(Protocol):
    """A reader's samples, by index: a 1-D integer array of token ids, or for a pair a
    tuple of two; decoded on demand by readers of image files."""

    def __len__(self) -> int: ...
    def __getitem__(self, index: int) -> Any: ...


def fitted(tokens: np.ndarray, max_length: int, *, truncate: bool, where: str) -> np.ndarray:
    """`tokens`, cut to `max_length` when `truncate`; a DataError naming `where` (the file
    and line) when it is longer and truncation was not asked for."""
    if len(tokens) <= max_length:
        return tokens
    if truncate:
        return tokens[:max_length].copy()  # a copy: do not keep the whole document alive
    raise DataError(
        f"{where} is {len(tokens)} tokens long, longer than max_length {max_length}; raise "
        f"max_length, or ask for truncation to keep the first {max_length} tokens as LRA does."
    )


@dataclass(kw_only=True, eq=False, repr=False)
class SequenceDataset(Dataset[tuple[torch.Tensor, int]]):
    """One split of an LRA task: token or pixel sequences and their class labels."""

    task: ClassVar[str] = SEQUENCE_TASK

    root: Path  # directory the data was read from
    task_name: str  # the LRA task: "listops", "text", "retrieval", "image" or "pathfinder"
    split: str  # "train", "val" or "test"
    sequences: Sequences
    targets: list[int]  # label of every item, in item order
    classes: list[str]  # class names; the position in the list is the class index
    vocab_size: int  # token ids are 0 .. vocab_size - 1 (the padding id included)
    max_length: int  # L: every item's sequence length (padded, or fixed for pixels)
    # The id sequences are padded with; None for pixel sequences, which are never padded.
    pad_id: int | None
    pair: bool = False  # items are (2, L): the two documents of a retrieval pair
    # Added to every stored id (bytes are stored raw and become byte + 1, LRA's ids).
    offset: int = 0
    class_index_note: str  # one sentence for the report: how class indices were assigned
    # One sentence for the report when sequences were cut or converted; None if not.
    preprocessing_note: str | None = None
    files: list[str] | None = None  # each item's file relative to root (reviews, images)
    # Layout name, a key of robench.data's layout table: "lra-" + task_name.
    kind: str = field(init=False)
    # Not restricted to a label space: the labels are the model's output indices.
    output_classes: tuple[int, ...] | None = field(default=None, init=False)
    label_space: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        if len(self.sequences) != len(self.targets):
            raise ValueError(f"{len(self.sequences)} sequences but {len(self.targets)} targets")
        self.kind = f"lra-{self.task_name}"

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for a dataset of {len(self)} items")
        index %= len(self)
        stored = self.sequences[index]
        if self.pair:
            tokens = np.stack([self._padded(part) for part in stored])  # (2, L)
        else:
            tokens = self._padded(stored)  # (L,)
        return torch.from_numpy(tokens), self.targets[index]

    def _padded(self, stored: np.ndarray) -> np.ndarray:
        out = np.full(self.max_length, self.pad_id or 0, dtype=np.int64)
        out[: len(stored)] = stored
        if self.offset:
            out[: len(stored)] += self.offset
        return out

    def relative_paths(self) -> list[str] | None:
        """Each item's file relative to `root` (what resume fingerprints and subsets name), or
        None when items are rows of a few files (ListOps, AAN, CIFAR-10 batches)."""
        return self.files

    def lengths(self) -> list[int]:
        """Each item's unpadded length (of its longer document for a pair); decodes images."""
        return [
            max(map(len, stored)) if self.pair else len(stored)
            for stored in (self.sequences[i] for i in range(len(self)))
        ]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(task_name={self.task_name!r}, root={str(self.root)!r}, "
            f"split={self.split!r}, items={len(self)}, max_length={self.max_length}, "
            f"classes={len(self.classes)})"
        )


def cut_note(cut: int, total: int, what: str, length: int) -> str | None:
    """The dataset's preprocessing note when `cut` of `total` byte documents (`what`: "reviews",
    "documents") were cut to `length` bytes; None when none was."""
    if not cut:
        return None
    return f"{cut} of {total} {what} were cut to their first {length} bytes, as LRA cuts them"


def compact(tokens: Sequence[int] | np.ndarray) -> np.ndarray:
    """Token ids as the smallest unsigned array that holds them (ids here are below 65536)."""
    array = np.asarray(tokens)
    dtype = np.uint8 if (array.size == 0 or int(array.max()) < 256) else np.uint16
    return array.astype(dtype, copy=False)
