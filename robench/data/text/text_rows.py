"""Texts as the text-classification task's inputs: rows of UTF-8 bytes, `PAD_BYTE` (-1) padded.

The model tokenizes inside, as an image model normalises inside, so a perturbation edits
characters whatever the tokenizer (docs/text-classification.md, "Models").
`LabeledTextDataset` is one labelled split as the task's dataset.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from robench.data.text.labeled_texts import LabeledTexts

PAD_BYTE = -1


def encode_rows(texts: Sequence[str]) -> torch.Tensor:
    """Byte rows (len(texts), longest text's bytes, at least 1) of `texts`, -1 padded."""
    import torch

    encoded = [text.encode("utf-8") for text in texts]
    rows = torch.full((len(encoded), max((len(b) for b in encoded), default=0) or 1), PAD_BYTE)
    for row, data in enumerate(encoded):
        if data:
            rows[row, : len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return rows


def decode_rows(rows: torch.Tensor) -> list[str]:
    """The texts of byte rows (padding dropped); bytes that are not UTF-8 are replaced."""
    import numpy as np

    values = rows.detach().cpu().numpy()
    # A row's bytes come first and padding after, so its length is its count of bytes.
    lengths = (values >= 0).sum(axis=1)
    as_bytes = values.astype(np.uint8)
    return [
        as_bytes[row, :length].tobytes().decode("utf-8", errors="replace")
        for row, length in enumerate(lengths.tolist())
    ]


def collate_rows(items: Sequence[tuple[torch.Tensor, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(byte rows (B, L), labels (B,)) of dataset items."""
    import torch

    length = max((len(row) for row, _ in items), default=0) or 1
    rows = torch.full((len(items), length), PAD_BYTE)
    for i, (row, _) in enumerate(items):
        rows[i, : len(row)] = row
    return rows, torch.tensor([label for _, label in items], dtype=torch.long)


class LabeledTextDataset:
    """A labelled text split as the text-classification task's dataset."""

    task = "text-classification"
    output_classes: tuple[int, ...] | None = None  # no --classes views of text data
    label_space: Any = None
    preprocessing_note: str | None = None

    def __init__(self, texts: LabeledTexts, labels: Sequence[int] | None = None) -> None:
        self.texts = texts.texts
        # The labels as model outputs (the data's own, or mapped onto the model's classes).
        self.targets = list(texts.labels if labels is None else labels)
        self.classes = texts.classes
        self.root: Path = texts.root
        self.kind = texts.layout
        self.split: str | None = texts.split
        self.class_index_note = (
            f"labels index the {len(texts.classes)} classes {', '.join(texts.classes[:8])}"
            f"{', ...' if len(texts.classes) > 8 else ''}"
        )

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return encode_rows([self.texts[index]])[0], self.targets[index]
