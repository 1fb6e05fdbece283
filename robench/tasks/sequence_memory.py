"""Token sequences held in memory (`robench.evaluate(data=...)`) as an LRA dataset.

`InMemory` items are `(tokens, label)`: an integer tensor or array of token ids, (L,), or
(2, L) for a retrieval model's document pairs. What a file's reader would say of its data
(vocabulary, padding, pairing, task) is the model's: the data is evaluated as the model reads
it, and every sequence is checked to be token ids.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from robench._core.errors import DataError
from robench.data.in_memory import KIND, InMemory


class InMemorySequences:
    """The contract of `robench.data.lra.sequences.SequenceDataset` over items in memory: `data`
    read as `network` reads it (as data of `lra_task` when given)."""

    def __init__(self, data: InMemory, network: nn.Module, lra_task: str | None = None) -> None:
        self.data = data
        self.kind = KIND
        # The LRA task says what the ids are (tokens, or pixels of image and Pathfinder
        # data), which decides the perturbations that apply; "in-memory" when unknown.
        self.task_name: str = lra_task or getattr(network, "lra_task", None) or "in-memory"
        self.vocab_size = int(getattr(network, "vocab_size", 0))
        self.pad_id: int | None = getattr(network, "pad_id", None)
        self.pair = bool(getattr(network, "pair", False))
        self.labels = [_label(t, f"item {i} of {data.name}") for i, t in enumerate(data.targets)]
        self.num_classes = max(self.labels, default=-1) + 1
        self.classes = data.classes
        self.max_length = max((self[i][0].shape[-1] for i in range(len(data))), default=0)
        if self.vocab_size == 0:  # a model that does not say: the largest id read
            self.vocab_size = 1 + max((int(self[i][0].max()) for i in range(len(data))), default=0)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        tokens, _ = self.data.item(index)
        if isinstance(tokens, np.ndarray):
            tokens = torch.from_numpy(tokens)
        where = f"item {index} of {self.data.name}"
        if not isinstance(tokens, torch.Tensor) or tokens.is_floating_point():
            raise DataError(
                f"{where} is not a tensor of token ids (got {type(tokens).__name__}); pass "
                "integer token ids (L,), or (2, L) document pairs for a retrieval model."
            )
        return tokens.long().cpu(), self.labels[index]


def _label(value: Any, where: str) -> int:
    if isinstance(value, (torch.Tensor, np.generic)) and np.size(value) == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DataError(f"{where} has label {value!r}; labels are class indices (integers >= 0).")
    return value
