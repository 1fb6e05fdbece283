"""Fast Minimum-norm attack (FMN): the smallest L-inf or L2 perturbation that changes a
classifier's prediction, per sample (Pintor, Roli, Brendel and Biggio, "Fast Minimum-norm
Adversarial Attacks through Adaptive Norm Constraints", NeurIPS 2021,
https://arxiv.org/abs/2102.12827, Algorithm 1, written here from the paper). With the margin
m(x) = z_y(x) - max_{j != y} z_j(x) (adversarial when m < 0) and delta_0 = 0, step k = 1..K:

    g       = grad_delta m(x + delta)
    if m < 0:        best = delta if ||delta||_p < ||best||_p
                     eps = min(eps (1 - gamma_k), ||best||_p)
    elif no best:    eps = max(||delta||_p + m / ||g||_q, eps (1 + gamma_k))
                                            (linear estimate, q dual to p; never shrinking)
    else:            eps = eps (1 + gamma_k)
    delta   = delta - alpha_k g / ||g||_2                     (a step down the margin)
    delta   = project onto {||delta||_p <= eps}, then clip x + delta to [0, 1]

alpha_k and gamma_k fall from alpha_0 to alpha_0 / 100 and from gamma_0 to 0.001 by a cosine.
The last iterate is checked once more after the loop. No randomness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from robench.perturbations.threat_models import DUAL_ORDER, NORMS

_FINAL_FRACTION = 0.01  # alpha_K = alpha_0 / 100
_GAMMA_FINAL = 0.001


@dataclass(frozen=True)
class MinimalNormFound:
    best: torch.Tensor  # (B, C, H, W) the smallest adversarial image found; clean when none
    norm: torch.Tensor  # (B,) its norm; inf where none was found, 0 where clean is wrong
    # (B,) the first iterate (0 = clean, k = after k steps) adversarial within the cap; -1: none
    first_success: torch.Tensor


def _margin(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """z_y - max_{j != y} z_j per sample (B,); negative when the prediction is wrong."""
    true = logits.gather(1, labels[:, None]).squeeze(1)  # (B,)
    others = logits.scatter(1, labels[:, None], float("-inf"))  # (B, K)
    return true - others.amax(dim=1)


def _cosine(start: float, end: float, k: int, steps: int) -> float:
    return end + (start - end) * (1 + math.cos(math.pi * k / steps)) / 2


def _project(delta: torch.Tensor, eps: torch.Tensor, norm: str) -> torch.Tensor:
    """delta with every sample inside the `norm` ball of its own radius eps (B,)."""
    view = (-1,) + (1,) * (delta.dim() - 1)
    if norm == "linf":
        radius = eps.view(view)
        return torch.maximum(torch.minimum(delta, radius), -radius)
    lengths = delta.flatten(1).norm(p=2, dim=1)  # (B,)
    scale = torch.where(lengths > eps, eps / lengths.clamp_min(1e-12), torch.ones_like(eps))
    return delta * scale.view(view)


def fmn(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    norm: str,
    steps: int,
    step_size: float,
    gamma: float,
    cap: float = math.inf,
    record_first: bool = True,
) -> MinimalNormFound:
    """FMN on pixel images in [0, 1] against the true `labels` (B,); `cap` only decides
    which iterate is the first success. `record_first = False` leaves `first_success` at -1
    (the benchmark's baseline)."""
    distance = NORMS[norm].distance
    batch = images.shape[0]
    view = (-1,) + (1,) * (images.dim() - 1)
    delta = torch.zeros_like(images)
    eps = torch.zeros(batch, device=images.device)
    best_norm = torch.full((batch,), math.inf, device=images.device)
    best = images.clone()
    first = torch.full((batch,), -1, dtype=torch.long, device=images.device)

    def record(k: int, adv_images: torch.Tensor, margin: torch.Tensor) -> torch.Tensor:
        nonlocal best_norm, best, first
        adversarial = margin < 0  # (B,)
        length = distance(adv_images - images)  # (B,)
        better = adversarial & (length < best_norm)
        best_norm = torch.where(better, length, best_norm)
        best = torch.where(better.view(view), adv_images, best)
        if record_first:
            success = adversarial & (length <= cap) & (first < 0)
            first = torch.where(success, k, first)
        return adversarial

    for k in range(steps):
        alpha = _cosine(step_size, step_size * _FINAL_FRACTION, k, steps)
        gamma_k = _cosine(gamma, _GAMMA_FINAL, k, steps)
        delta.requires_grad_(True)
        adv_images = images + delta
        margin = _margin(model(adv_images), labels)  # (B,)
        (grad,) = torch.autograd.grad(margin.sum(), delta)
        delta = delta.detach()
        margin = margin.detach()
        adversarial = record(k, adv_images.detach(), margin)
        found = torch.isfinite(best_norm)
        dual = grad.flatten(1).norm(p=DUAL_ORDER[norm], dim=1).clamp_min(1e-12)  # (B,)
        estimate = distance(delta) + margin / dual
        # Before the first adversarial the radius never shrinks: a step that lands exactly
        # on a (locally linear) boundary, margin 0, would otherwise stay there.
        grown = torch.where(
            found, eps * (1 + gamma_k), torch.maximum(estimate, eps * (1 + gamma_k))
        )
        shrunk = torch.minimum(eps * (1 - gamma_k), best_norm)
        eps = torch.where(adversarial, shrunk, grown).clamp_min(0)
        step = grad / grad.flatten(1).norm(p=2, dim=1).clamp_min(1e-12).view(view)
        delta = _project(delta - alpha * step, eps, norm)
        delta = (images + delta).clamp(0, 1) - images
    with torch.no_grad():
        last = images + delta
        record(steps, last, _margin(model(last), labels))
    return MinimalNormFound(best=best, norm=best_norm, first_success=first)
