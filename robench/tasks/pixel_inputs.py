"""The input checks every task on images shares: perturbed images stay within their threat
model's ball and in [0, 1], whatever the model predicts (classes or per-pixel classes)."""

from __future__ import annotations

from typing import Any

import torch

from robench.perturbations.checks import check_adversarial, check_pixel_values


class PixelInputs:
    """Mixed into the image tasks (`Task` subclasses) for their `check_perturbed` and
    `check_inputs`."""

    def check_perturbed(
        self, original: torch.Tensor, perturbed: torch.Tensor, perturbation: Any, *, name: str
    ) -> None:
        threat = perturbation.threat_model
        check_adversarial(original, perturbed, perturbation.eps, name=name, threat=threat)

    def check_inputs(self, inputs: torch.Tensor, *, name: str) -> None:
        check_pixel_values(inputs, name=name)
