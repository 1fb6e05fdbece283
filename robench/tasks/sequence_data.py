"""`SequenceData`: an LRA dataset (`robench.data.lra.sequences.SequenceDataset`) with what the
engine and the report read of every task's data (`tasks.base.TaskData`); `collate_sequences`
stacks a batch, padding shorter sequences with the data's padding id.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset

from robench._core.errors import DataError

SEQUENCE_CLASSIFICATION = "sequence-classification"


class SequenceData(Dataset[tuple[torch.Tensor, int]]):
    """An LRA split (see the module docstring); the attributes of the wrapped dataset that
    the models and perturbations need are forwarded: vocab_size, max_length, pad_id, pair,
    task_name, num_classes."""

    task = SEQUENCE_CLASSIFICATION
    output_classes: tuple[int, ...] | None = None  # no --classes views of sequence data
    label_space: Any = None
    preprocessing_note: str | None = None

    def __init__(self, dataset: Any, root: Path, split: str | None) -> None:
        self.dataset = dataset
        self.root = root
        self.split = split
        self.task_name: str = dataset.task_name
        self.kind: str = getattr(dataset, "kind", None) or f"lra-{self.task_name}"
        self.vocab_size: int = int(dataset.vocab_size)
        self.max_length: int = int(dataset.max_length)
        self.pad_id: int | None = None if dataset.pad_id is None else int(dataset.pad_id)
        self.pair: bool = bool(dataset.pair)
        self.num_classes: int = int(dataset.num_classes)
        named = list(getattr(dataset, "classes", None) or [])
        self.classes: list[str] = named or [str(i) for i in range(self.num_classes)]
        shown = ", ".join(self.classes[:8]) + (", ..." if len(self.classes) > 8 else "")
        self.class_index_note = f"labels index the {len(self.classes)} classes {shown}"

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        tokens, label = self.dataset[index]
        return torch.as_tensor(tokens, dtype=torch.long), int(label)

    @property
    def targets(self) -> list[int]:
        """Every sample's label (the wrapped dataset's list when it has one)."""
        known = getattr(self.dataset, "labels", None) or getattr(self.dataset, "targets", None)
        if known is not None:
            return [int(label) for label in known]
        return [int(self.dataset[i][1]) for i in range(len(self))]

    def longest(self) -> int:
        """The longest sequence's real length: up to its last token that is not padding
        (the wrapped dataset's max_length when it pads nothing)."""
        if self.pad_id is None:
            return self.max_length
        lengths = getattr(self.dataset, "lengths", None)
        if callable(lengths):  # robench.data.lra's readers know them without padding each item
            return max(lengths(), default=0)
        longest = 0
        for index in range(len(self)):
            real = self[index][0] != self.pad_id  # (L,) or (2, L)
            positions = torch.nonzero(real.reshape(-1, real.shape[-1]).any(dim=0))
            if len(positions):
                longest = max(longest, int(positions[-1]) + 1)
        return longest


def collate_sequences(
    items: Sequence[tuple[torch.Tensor, int]], pad_id: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch: token ids (B, L) or (B, 2, L), padded to the longest with `pad_id` and cut
    after the last real token, and the labels (B,)."""
    rows = [tokens for tokens, _ in items]
    labels = torch.tensor([label for _, label in items], dtype=torch.long)
    longest = max(row.shape[-1] for row in rows)
    if any(row.shape[-1] != longest for row in rows):
        if pad_id is None:
            raise DataError(
                f"the data's sequences differ in length (up to {longest}) and it has no "
                "padding id to bring them to one length; give every sequence the same length "
                "or a pad_id."
            )
        rows = [
            torch.nn.functional.pad(row, (0, longest - row.shape[-1]), value=pad_id) for row in rows
        ]
    batch = torch.stack(rows)
    if pad_id is not None:  # columns of padding only: the model pads to its own length anyway
        real = (batch != pad_id).reshape(-1, longest).any(dim=0)
        positions = torch.nonzero(real)
        batch = batch[..., : int(positions[-1]) + 1 if len(positions) else 1]
    return batch, labels
