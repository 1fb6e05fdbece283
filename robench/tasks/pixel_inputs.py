"""The input checks every task on images shares: perturbed images stay within their threat
model's ball and in [0, 1], whatever the model predicts (classes or per-pixel classes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from robench._core.errors import DataError
from robench.perturbations.checks import check_adversarial, check_pixel_values
from robench.tasks.finite_values import check_data_finite


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

    def check_data_values(self, inputs: torch.Tensor, indices: Sequence[int]) -> None:
        """The data's images: finite, and pixels in [0, 1] (robench's scale: eps is in pixel
        units), else a DataError naming the first sample outside."""
        check_data_finite(inputs, indices)
        check_pixel_range(inputs, indices)


def check_pixel_range(inputs: torch.Tensor, indices: Sequence[int]) -> None:
    """The finite images (B, ...) of dataset `indices` have pixels in [0, 1], else a
    DataError naming the first sample outside. Also run on each image a sample perturbation
    (a corruption) is about to change, whose output would hide what went in."""
    if inputs.numel() == 0 or not inputs.is_floating_point():
        return
    low, high = torch.aminmax(inputs.detach())  # one pass in the common case
    if bool(low >= 0) and bool(high <= 1):
        return
    flat = inputs.detach().reshape(inputs.shape[0], -1)
    outside = ((flat.amin(dim=1) < 0) | (flat.amax(dim=1) > 1)).nonzero().flatten().tolist()
    scale = " (0..255 images: divide by 255)" if float(high) > 1 else ""
    raise DataError(
        f"sample {indices[outside[0]]} of the data has pixel values outside [0, 1] (min "
        f"{float(low):.6g}, max {float(high):.6g}); robench takes images as floats in [0, "
        f"1]{scale}, with normalisation given as mean and std, not applied to the data."
    )
