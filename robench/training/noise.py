"""Gaussian noise augmentation (`robench train --noise-sd S`), as Cohen, Rosenfeld and Kolter
(ICML 2019) train the base classifiers of randomized smoothing: every training image gets
N(0, S^2) noise on its pixels ([0, 1] scale, before the model's normalisation, unclipped, as
their `train.py`), so the classifier learns to be right under the noise it is certified with
(`randomized-smoothing`, sigma = S). Validation sees noise too, from its own generator
reseeded at every validation, so each one scores the same noisy images and the best
checkpoint is the best under noise."""

from __future__ import annotations

import torch
from torch import nn


def add_noise(
    images: torch.Tensor, sd: float, generator: torch.Generator | None = None
) -> torch.Tensor:
    """`images` + N(0, sd^2), drawn from `generator` (torch's default when None)."""
    noise = torch.randn(images.shape, generator=generator, device=images.device)
    return images + noise.to(images.dtype) * sd


class NoisyInputs(nn.Module):
    """`model` scored on noisy copies of its inputs: the same noise at every validation
    (the generator restarts from `seed` in `reset`)."""

    def __init__(self, model: nn.Module, sd: float, seed: int, device: torch.device) -> None:
        super().__init__()
        self.model, self.sd, self.seed = model, sd, seed
        self.generator = torch.Generator(device=device)
        self.reset()

    def reset(self) -> None:
        self.generator.manual_seed(self.seed)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(add_noise(images, self.sd, self.generator))
