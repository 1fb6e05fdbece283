"""Randomized smoothing's CERTIFY (Cohen, Rosenfeld and Kolter, ICML 2019, Algorithm "certify";
their `core.py`), per sample:

    counts0 = votes of f(x + noise) over n0 noisy copies;  cA = argmax counts0
    counts  = votes over n fresh copies;                  nA = counts[cA]
    pA      = Clopper-Pearson lower bound (1 - alpha) of nA / n
    radius  = sigma Phi^-1(pA), or abstain when pA <= 1/2

The noise is added to the pixels before the model's normalisation, unclipped, as Cohen et al.
do; each sample draws from its own generator (docs/formats.md, "Randomized smoothing").
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from robench.perturbations.base import PerSampleAttack, SampleColumns
from robench.perturbations.certification.params import RandomizedSmoothingParams
from robench.perturbations.checks import in_eval_mode
from robench.perturbations.own_batch import OwnBatch
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


def noise_generator(seed: int, device: torch.device) -> torch.Generator:
    """A sample's own noise stream."""
    return torch.Generator(device=device).manual_seed(seed)


def noisy_copies(
    image: torch.Tensor, count: int, sigma: float, generator: torch.Generator
) -> torch.Tensor:
    """`count` copies (count, C, H, W) of `image` plus noise of std `sigma` from `generator`."""
    copies = image.unsqueeze(0).expand(count, *image.shape)
    noise = torch.randn(copies.shape, generator=generator, device=image.device, dtype=image.dtype)
    return copies + noise * sigma


def noise_votes(
    model: torch.nn.Module,
    images: torch.Tensor,
    num: int,
    batch: int,
    sigma: float,
    generators: Sequence[torch.Generator],
    own: OwnBatch,
) -> torch.Tensor:
    """Votes (S, K) of the base classifier over `num` noisy copies of each of `images`
    (S, C, H, W), noise of std `sigma` drawn from generators[i] in chunks of `batch` copies as
    Cohen et al.'s `_sample_noise` draws it; forward passes of at most `own.size` rows take
    consecutive samples' chunks together (docs/formats.md, "Randomized smoothing")."""
    counts: torch.Tensor | None = None
    pending: list[torch.Tensor] = []  # noisy copies not yet forwarded
    owners: list[torch.Tensor] = []  # each copy's sample
    rows = 0
    for i, (image, generator) in enumerate(zip(images, generators, strict=True)):
        remaining = num
        while remaining > 0:
            size = min(batch, remaining)
            pending.append(noisy_copies(image, size, sigma, generator))
            owners.append(torch.full((size,), i, device=image.device))
            rows, remaining = rows + size, remaining - size
            if rows >= own.size:
                counts = _vote(model, pending, owners, counts, len(images), own)
                pending, owners, rows = [], [], 0
    if pending:
        counts = _vote(model, pending, owners, counts, len(images), own)
    assert counts is not None  # num >= 1 (validated)
    return counts


def _vote(
    model: torch.nn.Module,
    pending: list[torch.Tensor],
    owners: list[torch.Tensor],
    counts: torch.Tensor | None,
    samples: int,
    own: OwnBatch,
) -> torch.Tensor:
    """`counts` (S, K) plus the base classifier's votes on the pending copies."""
    with own.calls():
        noisy, owner = torch.cat(pending), torch.cat(owners)
        for part in own.parts(len(noisy)):
            logits = model(noisy[part])  # (b, K)
            if counts is None:
                counts = logits.new_zeros((samples, logits.shape[-1]), dtype=torch.long)
            ones = torch.ones_like(owner[part])
            counts.index_put_((owner[part], logits.argmax(dim=-1)), ones, accumulate=True)
    assert counts is not None
    return counts


def certificate(
    selection: torch.Tensor, estimation: torch.Tensor, params: RandomizedSmoothingParams
) -> Certificate:
    """CERTIFY's answer from one sample's votes (K,) of each phase (on the CPU)."""
    candidate = int(selection.argmax())  # ties: the first class, as numpy's argmax in core.py
    count = int(estimation[candidate])
    p_lower, radius = cert.certify_counts(count, params.n, params.alpha, params.sigma)
    return Certificate(candidate, int(selection[candidate]), count, p_lower, radius)


class SmoothedAttack(PerSampleAttack):
    """A smoothed classifier's perturbation: one noise generator per sample, the model in eval
    mode, its forward passes sized by the `batch` option."""

    transferable = False  # a certificate is the evaluated model's own
    kind: ClassVar[str]  # the registered name, for the `batch` option's messages
    own_batch: OwnBatch

    def __init__(self, params: Any) -> None:
        super().__init__(params)
        self.own_batch = OwnBatch(self.kind, "batch", params.batch)

    def perturb_samples(
        self, model: nn.Module, inputs: Tensor, targets: Tensor, seeds: Sequence[int]
    ) -> tuple[Tensor, SampleColumns]:
        images = inputs.detach()
        generators = [noise_generator(seed, images.device) for seed in seeds]
        with in_eval_mode(model):  # the smoothed classifier's base classifier is deterministic
            return self.smoothed(model, images, targets, generators)

    @abc.abstractmethod
    def smoothed(
        self, model: nn.Module, images: Tensor, targets: Tensor, generators: list[torch.Generator]
    ) -> tuple[Tensor, SampleColumns]:
        """`perturb_samples` of the model in eval mode, sample i drawing from generators[i]."""


class RandomizedSmoothing(SmoothedAttack):
    """CERTIFY per sample; the clean images are returned (and scored) unchanged."""

    Params = RandomizedSmoothingParams
    kind = "randomized-smoothing"
    params: RandomizedSmoothingParams

    def smoothed(
        self, model: nn.Module, images: Tensor, targets: Tensor, generators: list[torch.Generator]
    ) -> tuple[Tensor, SampleColumns]:
        p, own = self.params, self.own_batch
        with torch.inference_mode():  # (S, K) votes of each phase, a sample's selection first
            selection = noise_votes(model, images, p.n0, p.batch, p.sigma, generators, own)
            estimation = noise_votes(model, images, p.n, p.batch, p.sigma, generators, own)
        pairs = zip(selection.cpu(), estimation.cpu(), strict=True)  # one sync
        found = [certificate(s, e, p).columns() for s, e in pairs]
        return images, {name: [one[name] for one in found] for name in p.columns}
