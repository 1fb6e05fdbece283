"""The identity perturbation: clean accuracy, measured by the same runner as every attack."""

from __future__ import annotations

import torch

from robench.perturbations.base import PERTURBATIONS, Perturbation, PerturbationParams


@PERTURBATIONS.register("clean")
class Clean(Perturbation):
    """Returns the images unchanged (a copy); takes no parameters."""

    Params = PerturbationParams

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        """Return a copy of `images`; `model`, `labels` and `seed` are unused."""
        return images.detach().clone()
