"""Randomized smoothing's CERTIFY (Cohen, Rosenfeld and Kolter, ICML 2019, Algorithm "certify";
their `core.py`), per sample:

    counts0 = votes of f(x + noise) over n0 noisy copies;  cA = argmax counts0
    counts  = votes over n fresh copies;                  nA = counts[cA]
    pA      = Clopper-Pearson lower bound (1 - alpha) of nA / n
    radius  = sigma Phi^-1(pA), or abstain when pA <= 1/2

The noise N(0, sigma^2 I) is added to the pixels in [0, 1], before the model's normalisation
(robench's models normalise inside), and not clipped, as Cohen et al. do, so sigma is in the
pixel units eps is. Each sample draws its noise from its own generator, seeded with the
runner's per-sample seed (run seed, result label, dataset index), selection draws first, in
chunks of `batch` copies: a sample's certificate is the same at any batch size of the run and
under torchrun. The scored input is the clean image; the certificate is in the columns.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from robench.perturbations.base import PerSampleAttack
from robench.perturbations.certification.params import RandomizedSmoothingParams
from robench.results.stats import certificates as cert


@dataclass(frozen=True)
class Certificate:
    """What CERTIFY found for one sample."""

    candidate: int  # cA
    count_selection: int  # cA's votes among the n0 selection draws
    count_estimation: int  # nA, cA's votes among the n estimation draws
    p_lower: float  # pA
    radius: float | None  # None: abstained

    def columns(self) -> dict[str, Any]:
        abstained = self.radius is None
        return {
            cert.CANDIDATE: self.candidate,
            cert.COUNT_SELECTION: self.count_selection,
            cert.COUNT_ESTIMATION: self.count_estimation,
            cert.P_LOWER: self.p_lower,
            cert.RADIUS: 0.0 if self.radius is None else self.radius,
            cert.ABSTAINED: abstained,
            cert.PREDICTION: None if abstained else self.candidate,
        }


@contextlib.contextmanager
def in_eval_mode(model: torch.nn.Module) -> Iterator[None]:
    """`model` in eval mode inside the block (the smoothed classifier's base classifier is
    deterministic), its own mode restored on exit."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def noise_generator(seed: int, device: torch.device) -> torch.Generator:
    """A sample's own noise stream."""
    return torch.Generator(device=device).manual_seed(seed)


def sample_counts(
    model: torch.nn.Module,
    image: torch.Tensor,
    num: int,
    batch: int,
    sigma: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """Votes (K,) of the base classifier over `num` copies of `image` (C, H, W) plus Gaussian
    noise of std `sigma`, `batch` copies per forward pass (Cohen et al.'s `_sample_noise`)."""
    counts: torch.Tensor | None = None
    remaining = num
    while remaining > 0:
        size = min(batch, remaining)
        copies = image.unsqueeze(0).expand(size, *image.shape)  # (b, C, H, W)
        noise = torch.randn(
            copies.shape, generator=generator, device=image.device, dtype=image.dtype
        )
        logits = model(copies + noise * sigma)  # (b, K)
        votes = torch.bincount(logits.argmax(dim=-1), minlength=logits.shape[-1])
        counts = votes if counts is None else counts + votes
        remaining -= size
    assert counts is not None  # num >= 1 (validated)
    return counts


def certify(
    model: torch.nn.Module,
    image: torch.Tensor,
    params: RandomizedSmoothingParams,
    generator: torch.Generator,
) -> Certificate:
    """CERTIFY for one image (C, H, W) in [0, 1] with noise from `generator`."""
    selection = sample_counts(model, image, params.n0, params.batch, params.sigma, generator)
    candidate = int(selection.argmax())  # ties: the first class, as numpy's argmax in core.py
    estimation = sample_counts(model, image, params.n, params.batch, params.sigma, generator)
    count = int(estimation[candidate])
    p_lower, radius = cert.certify_counts(count, params.n, params.alpha, params.sigma)
    return Certificate(candidate, int(selection[candidate]), count, p_lower, radius)


class RandomizedSmoothing(PerSampleAttack):
    """CERTIFY per sample; the clean images are returned (and scored) unchanged."""

    Params = RandomizedSmoothingParams
    transferable = False  # a certificate is the evaluated model's own
    params: RandomizedSmoothingParams

    def perturb_samples(
        self,
        model: torch.nn.Module,
        inputs: torch.Tensor,
        targets: torch.Tensor,
        seeds: Sequence[int],
    ) -> tuple[torch.Tensor, dict[str, list[Any]]]:
        columns: dict[str, list[Any]] = {name: [] for name in self.params.columns}
        with in_eval_mode(model), torch.no_grad():
            for image, seed in zip(inputs.detach(), seeds, strict=True):
                generator = noise_generator(seed, image.device)
                found = certify(model, image, self.params, generator).columns()
                for name, value in found.items():
                    columns[name].append(value)
        return inputs.detach(), columns
