"""A perturbation from a plugin: gamma correction, `x ** gamma` on every pixel.

A photometric shift with no budget (like ImageNet-C's brightness and contrast), model-free
and deterministic. Use it from a suite once this file is imported:

    [[perturbations]]
    kind = "gamma"
    gamma = 2.0

    robench eval vit_nano_fmnist --suite my-suite.toml \
        --import examples/plugins/gamma_perturbation.py

The parameter schema is registered now, without torch; the implementation named by the
"module:Class" path is imported when a run first builds the perturbation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from robench.registry import PerturbationParams, SamplePerturbation, register_perturbation

if TYPE_CHECKING:
    import torch


@register_perturbation("gamma", f"{__name__}:Gamma")
class GammaParams(PerturbationParams):
    """Gamma correction x ** gamma of images in [0, 1] (> 1 darkens, < 1 brightens)."""

    unbounded: ClassVar[bool] = True  # no eps-ball: checked for shape, range and finiteness
    gamma: float = Field(gt=0)


class Gamma(SamplePerturbation):
    """Applied to one image at a time while loading (in DataLoader workers), no randomness."""

    Params = GammaParams

    @property
    def seed_key(self) -> str:
        return f"gamma-{self.params.gamma}"

    def perturb_sample(self, item: torch.Tensor, seed: int) -> torch.Tensor:
        return item.clamp(0.0, 1.0) ** self.params.gamma
