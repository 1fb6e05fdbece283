"""FGSM and PGD for dense prediction, L-inf and L2, written in robench rather than run through
torchattacks (whose losses are a classifier's cross-entropy over (B, K) logits).

The loop is torchattacks' `PGD` / `PGDL2` step for step, drawing from torch's global RNG as
the library draws, so with a classifier's batch-mean cross-entropy it returns the library's
images under the same seed (tests/test_dense_pgd.py, to 1e-6).

The loss is `loss_fn(logits, labels, step, steps)` (step from 1) or a name in `LOSSES`: "ce"
and "segpgd" (`pixel_loss`), each sample's mean summed over the samples, so that a sample's
gradient, and without a random start its adversarial image, does not depend on its batch
(the random start does: every sample's is drawn from one stream, as in torchattacks).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from robench.perturbations.adversarial.pixel_loss import (
    per_sample_pixel_cross_entropy,
    segpgd_weight,
)
from robench.perturbations.checks import isolated_attack, project_onto_ball
from robench.perturbations.threat_models import NORMS, per_sample

# (logits, labels, step, steps) -> scalar loss to ascend; step counts from 1 to steps.
LossFn = Callable[[torch.Tensor, torch.Tensor, int, int], torch.Tensor]

# torchattacks PGDL2's `eps_for_division`: keeps a zero gradient from dividing by zero.
_EPS_FOR_DIVISION = 1e-10


def _pixel_ce(logits: torch.Tensor, labels: torch.Tensor, step: int, steps: int) -> torch.Tensor:
    return per_sample_pixel_cross_entropy(logits, labels).sum()


def _segpgd(logits: torch.Tensor, labels: torch.Tensor, step: int, steps: int) -> torch.Tensor:
    weighting = segpgd_weight(step, steps)
    return per_sample_pixel_cross_entropy(logits, labels, weighting=weighting).sum()


LOSSES: dict[str, LossFn] = {"ce": _pixel_ce, "segpgd": _segpgd}


def _linf_start(images: torch.Tensor, eps: float) -> torch.Tensor:
    noise = torch.empty_like(images).uniform_(-eps, eps)
    return torch.clamp(images + noise, min=0, max=1)


def l2_start(images: torch.Tensor, eps: float) -> torch.Tensor:
    """torchattacks `PGDL2`'s random start: a Gaussian direction, a radius uniform in [0, eps]."""
    delta = torch.empty_like(images).normal_()
    norms = per_sample(delta.reshape(images.shape[0], -1).norm(p=2, dim=1), images)
    radius = torch.zeros_like(norms).uniform_(0, 1)
    delta *= radius / norms * eps
    return torch.clamp(images + delta, min=0, max=1)


def _linf_direction(grad: torch.Tensor) -> torch.Tensor:
    return grad.sign()


def _l2_direction(grad: torch.Tensor) -> torch.Tensor:
    norms = grad.reshape(grad.shape[0], -1).norm(p=2, dim=1) + _EPS_FOR_DIVISION  # (B,)
    return grad / per_sample(norms, grad)


# Each norm's random start and step direction (its projection is NORMS[norm].project).
_STARTS = {"linf": _linf_start, "l2": l2_start}
_DIRECTIONS = {"linf": _linf_direction, "l2": _l2_direction}


def dense_pgd(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    eps: float,
    steps: int = 10,
    step_size: float | None = None,
    random_start: bool = True,
    norm: str = "linf",
    loss: str | LossFn = "ce",
    seed: int = 0,
) -> torch.Tensor:
    """PGD against `labels` on images (B, C, H, W) in [0, 1], in `norm` ("linf" or "l2");
    `step_size` defaults to eps / 4. Same seed, same images; the model is left as it was."""
    if norm not in _STARTS:
        raise ValueError(f"norm must be one of {sorted(_STARTS)}, got {norm!r}")
    if isinstance(loss, str) and loss not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)} or a callable, got {loss!r}")
    loss_fn = LOSSES[loss] if isinstance(loss, str) else loss
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    clean = images.detach()
    # A radius-0 ball is the image itself (the L2 start would divide 0 by 0).
    if clean.shape[0] == 0 or eps == 0:
        return clean.clone()
    alpha = eps / 4 if step_size is None else step_size
    threat = NORMS[norm]
    labels = labels.detach()
    zeros = torch.zeros_like(clean)
    with isolated_attack(model, seed, clean.device):
        adv = _STARTS[norm](clean, eps) if random_start else clean.clone()
        for step in range(1, steps + 1):
            adv.requires_grad_(True)
            cost = loss_fn(model(adv), labels, step, steps)
            (grad,) = torch.autograd.grad(cost, adv)
            adv = adv.detach() + alpha * _DIRECTIONS[norm](grad)
            delta = threat.project(adv - clean, zeros, eps)
            adv = torch.clamp(clean + delta, min=0, max=1).detach()
    return project_onto_ball(adv, clean, eps, name="dense_pgd", threat=threat)


def dense_fgsm(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    eps: float,
    loss: str | LossFn = "ce",
    seed: int = 0,
) -> torch.Tensor:
    """FGSM: one signed-gradient step of size eps from the clean image, clipped to [0, 1]."""
    return dense_pgd(
        model,
        images,
        labels,
        eps=eps,
        steps=1,
        step_size=eps,
        random_start=False,
        norm="linf",
        loss=loss,
        seed=seed,
    )
