"""Scoring among a subset of a model's classes (ImageNet-A/R, timm's `--valid-labels`): the
wrapped model returns only the logits of the listed classes, in list order (the protocol of
docs/datasets.md, "label space"; the argmax over all 1000 classes gives lower numbers).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from robench.models.loaded_model import module_device


class RestrictedOutputs(nn.Module):
    def __init__(self, model: nn.Module, output_classes: Sequence[int]) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("output_classes", torch.as_tensor(list(output_classes)), False)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.model(inputs).index_select(-1, self.output_classes)


def restrict_outputs(model: nn.Module, output_classes: Sequence[int] | None) -> nn.Module:
    """`model` itself when `output_classes` is None, else a view scoring only those classes."""
    if output_classes is None:
        return model
    return RestrictedOutputs(model, output_classes).to(module_device(model))
