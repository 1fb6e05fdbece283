"""The `corruption` kind: an ImageNet-C corruption applied to each image on the fly.

Images arrive as the model sees them (after resize and crop, in [0, 1]) and are corrupted as
uint8 H x W x C (grey images through RGB, `apply.py`), per sample while the data loads.
"""

from __future__ import annotations

import torch

from robench.perturbations.base import SamplePerturbation
from robench.perturbations.corruptions.apply import corrupt_image
from robench.perturbations.corruptions.params import CorruptionParams


class Corruption(SamplePerturbation):
    Params = CorruptionParams
    params: CorruptionParams

    @property
    def seed_key(self) -> str:
        # The implementation is left out: both give the same image for the same seed.
        return f"corruption:{self.params.corruption}-{self.params.severity}"

    def perturb_sample(self, item: torch.Tensor, seed: int) -> torch.Tensor:
        # The loaders' images are uint8 / 255, so rounding recovers their grey levels exactly.
        pixels = (item.detach().cpu() * 255).round().clamp(0, 255).to(torch.uint8)
        image = pixels.permute(1, 2, 0).numpy()
        p = self.params
        corrupted = corrupt_image(image, p.corruption, p.severity, seed, p.implementation)
        out = torch.from_numpy(corrupted.reshape(image.shape)).permute(2, 0, 1)
        return out.to(item.dtype).div_(255).to(item.device)
