"""PGD-L2 on the smoothed classifier (Salman et al., "Provably Robust Deep Learning via
Adversarially Trained Smoothed Classifiers", NeurIPS 2019, https://arxiv.org/abs/1906.04584,
SmoothAdv's attack), then Cohen et al.'s PREDICT at the adversarial image, per sample:

    for each of `steps` steps, with m = `noise_samples` fresh draws d_1..d_m ~ N(0, sigma^2 I):
        loss  = CE( log( (1/m) sum_i softmax(f(x' + d_i)) ), y )   # an EOT over the noise
        x'    = proj_{||x' - x||_2 <= eps}( x' + step * grad / ||grad||_2 ), clipped to [0, 1]
    PREDICT: votes of f over n copies x' + noise; the top class unless the binomial test of
    its count against the runner-up's does not reject at alpha (then abstain)

The attack starts at the clean image (Salman et al.'s has no random start). The noise per
sample, what is scored and the check it feeds: docs/formats.md, "Randomized smoothing".
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from robench.perturbations.base import SampleColumns
from robench.perturbations.certification.params import SmoothedPGDParams
from robench.perturbations.certification.smoothing import (
    SmoothedAttack,
    noise_votes,
    noisy_copies,
)
from robench.perturbations.own_batch import OwnBatch
from robench.results.stats import certificates as cert


def smoothed_losses(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    params: SmoothedPGDParams,
    generators: Sequence[torch.Generator],
) -> torch.Tensor:
    """The cross-entropy (S,) of the smoothed soft classifier at each of `images`
    (S, C, H, W), from `noise_samples` noisy copies each, all in one forward pass."""
    m = params.noise_samples
    noisy = [
        noisy_copies(image, m, params.sigma, generator)
        for image, generator in zip(images, generators, strict=True)
    ]
    logits = model(torch.cat(noisy))  # (S m, K)
    probs = logits.softmax(dim=-1).view(len(images), m, -1).mean(dim=1)  # (S, K)
    return -torch.log(probs.gather(1, labels[:, None]).squeeze(1).clamp_min(1e-12))


def _per_sample_norms(tensor: torch.Tensor) -> torch.Tensor:
    """The L2 norm of each sample (S,), each reduced on its own, as a one-sample run does."""
    return torch.stack([row.norm() for row in tensor])


def attack(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    params: SmoothedPGDParams,
    generators: Sequence[torch.Generator],
) -> torch.Tensor:
    """SmoothAdv's PGD-L2 from the clean images (S, C, H, W), all samples a step at a time."""
    adversarial = images.clone()
    if params.eps == 0:
        return adversarial
    view = (-1,) + (1,) * (images.dim() - 1)
    for _ in range(params.steps):
        adversarial.requires_grad_(True)
        losses = smoothed_losses(model, adversarial, labels, params, generators)
        # A sample's loss depends on its own image only: the sum's gradient is each one's.
        (grad,) = torch.autograd.grad(losses.sum(), adversarial)
        norms = _per_sample_norms(grad).clamp_min(1e-12).view(view)
        step = grad / norms * params.resolved_step_size
        delta = adversarial.detach() + step - images
        delta = delta * (params.eps / _per_sample_norms(delta)).clamp(max=1.0).view(view)
        adversarial = (images + delta).clamp(0.0, 1.0)
    return adversarial.detach()


def predictions(
    model: torch.nn.Module,
    images: torch.Tensor,
    params: SmoothedPGDParams,
    generators: Sequence[torch.Generator],
    own: OwnBatch,
) -> list[int | None]:
    """Cohen et al.'s PREDICT at each of `images`: the smoothed prediction, or None (abstain)."""
    votes = noise_votes(model, images, params.n, params.batch, params.sigma, generators, own)
    top = torch.topk(votes, k=min(2, votes.shape[-1]), dim=-1)
    values, indices = top.values.cpu(), top.indices.cpu()  # one sync for the batch
    found: list[int | None] = []
    for row, classes in zip(values.tolist(), indices.tolist(), strict=True):
        runner_up = row[1] if len(row) > 1 else 0
        found.append(None if cert.predict_abstains(row[0], runner_up, params.alpha) else classes[0])
    return found


class SmoothedPGD(SmoothedAttack):
    """SmoothAdv's PGD-L2 on a batch at once, and the smoothed prediction at its image."""

    Params = SmoothedPGDParams
    kind = "smoothed-pgd"  # its `batch` sizes PREDICT's forward passes
    params: SmoothedPGDParams

    def smoothed(
        self, model: nn.Module, images: Tensor, targets: Tensor, generators: list[torch.Generator]
    ) -> tuple[Tensor, SampleColumns]:
        with torch.enable_grad():
            adversarial = attack(model, images, targets, self.params, generators)
        with torch.inference_mode():
            found = predictions(model, adversarial, self.params, generators, self.own_batch)
        columns: SampleColumns = {
            cert.PREDICTION: found,
            cert.ABSTAINED: [prediction is None for prediction in found],
        }
        return adversarial, columns
