"""The identity perturbation: clean accuracy, measured by the same runner as every attack."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from robench.perturbations.base import Perturbation, PerturbationParams, register_kind

if TYPE_CHECKING:
    import torch


@register_kind("clean", "robench.perturbations.clean:Clean")
class CleanParams(PerturbationParams):
    """The identity takes no parameters."""

    task: ClassVar[str | None] = None  # every task has a clean result
    display: ClassVar[str | None] = "clean (ε = 0)"  # the accuracy figure's zero-budget point


class Clean(Perturbation):
    """Returns the images unchanged; takes no parameters."""

    Params = CleanParams
    uses_model: ClassVar[bool] = False
    identity: ClassVar[bool] = True

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        """`images` itself (no copy: nothing uses the batch after it is scored)."""
        return images.detach()
