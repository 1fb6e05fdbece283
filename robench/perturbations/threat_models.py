"""Threat models in one table: each row says how far a perturbed image is from its original,
how to project back onto the ball, and how a budget is shown.

Adding a norm (L2 is next) means one row here and the value in an attack's `norm` parameter;
the runner and the post-attack check read this table and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from robench._core.units import display_pixel_value


@dataclass(frozen=True)
class ThreatModel:
    """One norm ball around the clean image, in pixel units on the [0, 1] scale."""

    name: str  # shown beside eps in tables: "Linf 8/255"
    # (B, ...) differences -> (B,) distances per sample, in float64 for the check
    distance: Callable[[torch.Tensor], torch.Tensor]
    # (adv, clean, eps) -> adv projected onto the ball (values inside come back unchanged)
    project: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]
    display: Callable[[float], str]  # how a budget is written: "8/255"


def _linf_distance(diff: torch.Tensor) -> torch.Tensor:
    return diff.reshape(diff.shape[0], -1).abs().amax(dim=1)


def _linf_project(adv: torch.Tensor, clean: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.minimum(torch.maximum(adv, clean - eps), clean + eps)


NORMS: dict[str, ThreatModel] = {
    "linf": ThreatModel("Linf", _linf_distance, _linf_project, display_pixel_value),
}
