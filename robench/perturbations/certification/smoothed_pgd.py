"""PGD-L2 on the smoothed classifier (Salman et al., "Provably Robust Deep Learning via
Adversarially Trained Smoothed Classifiers", NeurIPS 2019, https://arxiv.org/abs/1906.04584,
SmoothAdv's attack), then Cohen et al.'s PREDICT at the adversarial image, per sample:

    for each of `steps` steps, with m = `noise_samples` fresh draws d_1..d_m ~ N(0, sigma^2 I):
        loss  = CE( log( (1/m) sum_i softmax(f(x' + d_i)) ), y )   # an EOT over the noise
        x'    = proj_{||x' - x||_2 <= eps}( x' + step * grad / ||grad||_2 ), clipped to [0, 1]
    PREDICT: votes of f over n copies x' + noise; the top class unless the binomial test of
    its count against the runner-up's does not reject at alpha (then abstain)

The attack starts at the clean image (Salman et al.'s attack has no random start). Each
sample draws its noise from its own generator, seeded with the runner's per-sample seed, the
attack's draws first and PREDICT's after, so its result does not depend on the batch size;
as in `smoothing.py`, noise is added before the model's normalisation and not clipped. The
smoothed classifier's prediction at x' is in the columns; the runner scores the base
classifier on x' (`top1`). A certificate of the same sigma holds the smoothed prediction
within its radius, so this attack, and not one on the base classifier, can contradict it
(`results/stats/certificate_checks.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from robench.perturbations.base import PerSampleAttack
from robench.perturbations.certification.params import SmoothedPGDParams
from robench.perturbations.certification.smoothing import (
    in_eval_mode,
    noise_generator,
    sample_counts,
)
from robench.results.stats import certificates as cert


def smoothed_loss(
    model: torch.nn.Module,
    image: torch.Tensor,
    label: int,
    params: SmoothedPGDParams,
    generator: torch.Generator,
) -> torch.Tensor:
    """The cross-entropy of the smoothed soft classifier at `image` (C, H, W), estimated with
    `noise_samples` noisy copies."""
    copies = image.unsqueeze(0).expand(params.noise_samples, *image.shape)  # (m, C, H, W)
    noise = torch.randn(copies.shape, generator=generator, device=image.device, dtype=image.dtype)
    probs = model(copies + noise * params.sigma).softmax(dim=-1).mean(dim=0)  # (K,)
    return -torch.log(probs[label].clamp_min(1e-12))


def attack(
    model: torch.nn.Module,
    image: torch.Tensor,
    label: int,
    params: SmoothedPGDParams,
    generator: torch.Generator,
) -> torch.Tensor:
    """SmoothAdv's PGD-L2 from the clean image; the result stays in the eps ball and [0, 1]."""
    adversarial = image.clone()
    if params.eps == 0:
        return adversarial
    for _ in range(params.steps):
        adversarial.requires_grad_(True)
        (grad,) = torch.autograd.grad(
            smoothed_loss(model, adversarial, label, params, generator), adversarial
        )
        step = grad / grad.norm().clamp_min(1e-12) * params.resolved_step_size
        delta = adversarial.detach() + step - image
        delta = delta * (params.eps / delta.norm()).clamp(max=1.0)
        adversarial = (image + delta).clamp(0.0, 1.0)
    return adversarial.detach()


def predict(
    model: torch.nn.Module,
    image: torch.Tensor,
    params: SmoothedPGDParams,
    generator: torch.Generator,
) -> int | None:
    """Cohen et al.'s PREDICT at `image`: the smoothed prediction, or None (abstain)."""
    counts = sample_counts(model, image, params.n, params.batch, params.sigma, generator)
    top = torch.topk(counts, k=min(2, counts.numel()))
    count_top = int(top.values[0])
    count_runner_up = int(top.values[1]) if counts.numel() > 1 else 0
    if cert.predict_abstains(count_top, count_runner_up, params.alpha):
        return None
    return int(top.indices[0])


class SmoothedPGD(PerSampleAttack):
    """SmoothAdv's PGD-L2 per sample, and the smoothed prediction at its image."""

    Params = SmoothedPGDParams
    transferable = False  # a certificate is the evaluated model's own
    params: SmoothedPGDParams

    def perturb_samples(
        self,
        model: torch.nn.Module,
        inputs: torch.Tensor,
        targets: torch.Tensor,
        seeds: Sequence[int],
    ) -> tuple[torch.Tensor, dict[str, list[Any]]]:
        columns: dict[str, list[Any]] = {name: [] for name in self.params.columns}
        adversarials = []
        with in_eval_mode(model):
            for image, label, seed in zip(inputs.detach(), targets.tolist(), seeds, strict=True):
                generator = noise_generator(seed, image.device)
                with torch.enable_grad():
                    adversarial = attack(model, image, int(label), self.params, generator)
                with torch.no_grad():
                    prediction = predict(model, adversarial, self.params, generator)
                adversarials.append(adversarial)
                columns[cert.PREDICTION].append(prediction)
                columns[cert.ABSTAINED].append(prediction is None)
        return torch.stack(adversarials), columns
