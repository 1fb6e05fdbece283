"""Each sample's first successful iteration of an attack that runs in a library's own loop.

`FirstWrong` wraps a classifier: every forward pass on the whole batch is one iterate of the
attack (torchattacks' PGD evaluates iterate t, 0 its start, in its t-th forward; under EOT,
`passes` forwards per iterate), and it keeps per sample the first iterate predicted wrong, at
an argmax and a comparison per pass, without a GPU sync (benchmarks/bench_attack_records.py).
The last iterate, which the library returns unevaluated, is scored by the runner's re-run
(docs/formats.md, "Attack columns").
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class FirstWrong(nn.Module):
    """`model`, recording per sample the first forward call (0-based) that misclassified it."""

    def __init__(self, model: nn.Module, labels: torch.Tensor, passes: int = 1) -> None:
        super().__init__()
        self.model = model
        self.labels = labels
        self.passes = passes  # forward passes per iterate (EOT samples of one gradient)
        self.calls = 0
        self.first = torch.full_like(labels, -1)  # (B,) -1: never wrong
        self.train(model.training)  # the wrapper is in the mode of what it wraps

    def forward(self, inputs: torch.Tensor) -> Any:
        logits = self.model(inputs)
        if inputs.shape[0] == self.labels.shape[0]:  # the whole batch: one iterate
            wrong = logits.detach().argmax(dim=-1) != self.labels  # (B,)
            iterate = self.calls // self.passes
            self.first = torch.where(wrong & (self.first < 0), iterate, self.first)
            self.calls += 1
        return logits

    def column(self) -> list[int | None]:
        """The report's `first_success`: the first wrong iterate, None when none was."""
        return [None if k < 0 else k for k in self.first.tolist()]
