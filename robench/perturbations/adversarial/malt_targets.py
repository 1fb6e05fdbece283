"""MALT's target ranking: mesoscopic almost-linearity scores (Melamed et al., NeurIPS 2024).

As the public code defines it (odeliamel/MALT, targeting.py `get_k_best_target_classes`):
with logits z = f(x), predicted class p and true class y, the candidates C are the `testk`
classes with the largest logits other than y's (capped to classes - 1). For each candidate c,

    score(c) = (z_p - z_c) / || grad_x (z_c - z_y) ||_q

with q the dual of the threat model's norm: the distance to c's decision boundary if f were
linear around x. The k targets are the k smallest scores, ascending, ties by class index (the
zero-gradient and tie rules: docs/malt.md).
"""

from __future__ import annotations

import torch

from robench.perturbations.threat_models import DUAL_ORDER


def candidate_classes(logits: torch.Tensor, labels: torch.Tensor, testk: int) -> torch.Tensor:
    """(B, testk) classes with the largest logits other than the true one, largest first."""
    masked = logits.scatter(1, labels.unsqueeze(1), -float("inf"))
    testk = min(testk, logits.shape[-1] - 1)
    return masked.topk(testk, dim=1).indices


def _difference_gradients(
    model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, candidates: torch.Tensor
) -> torch.Tensor:
    """(B, testk, D): grad_x (z_c - z_y) for every candidate c, one forward and backward of
    the batch per candidate (the code repeats each image per candidate: the same passes)."""
    rows = torch.arange(images.shape[0], device=images.device)
    grads = []
    for j in range(candidates.shape[1]):
        x = images.detach().clone().requires_grad_(True)
        logits = model(x)
        direction = torch.zeros_like(logits)
        direction[rows, candidates[:, j]] = 1.0
        direction[rows, labels] = -1.0
        (grad,) = torch.autograd.grad(logits, x, grad_outputs=direction)
        grads.append(grad.flatten(1))
    return torch.stack(grads, dim=1)


def malt_scores(
    logits: torch.Tensor,
    labels: torch.Tensor,
    candidates: torch.Tensor,
    gradients: torch.Tensor,
    norm: str,
) -> torch.Tensor:
    """(B, K) scores: (z_p - z_c) / ||grad (z_c - z_y)||_q on the candidates (0 where the
    gradient is zero), +inf elsewhere."""
    rows = torch.arange(logits.shape[0], device=logits.device).unsqueeze(1)
    predicted = logits.argmax(dim=1, keepdim=True)
    differences = logits.gather(1, predicted) - logits[rows, candidates]  # (B, testk)
    norms = gradients.norm(p=DUAL_ORDER[norm], dim=2)  # (B, testk)
    nonzero = norms != 0
    ratios = torch.zeros_like(differences)
    ratios[nonzero] = differences[nonzero] / norms[nonzero]
    scores = torch.full_like(logits, float("inf"))
    scores[rows, candidates] = ratios
    return scores


def malt_targets(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    logits: torch.Tensor,
    *,
    norm: str,
    testk: int,
    k: int,
) -> torch.Tensor:
    """(B, k) target classes, the best-ranked (smallest score) first; `logits` are the model's
    on `images`."""
    candidates = candidate_classes(logits, labels, testk)
    gradients = _difference_gradients(model, images, labels, candidates)
    scores = malt_scores(logits, labels, candidates, gradients, norm)
    k = min(k, logits.shape[-1] - 1)
    return scores.sort(dim=1, stable=True).indices[:, :k]


def logit_targets(logits: torch.Tensor, k: int) -> torch.Tensor:
    """(B, k) targets as pyautoattack's APGD-T picks them: the 2nd, 3rd, ... largest logit
    (`output.sort(dim=1)[1][:, -target_class]` for target_class = 2 .. k + 1)."""
    order = logits.sort(dim=1)[1]
    k = min(k, logits.shape[-1] - 1)
    return torch.stack([order[:, -t] for t in range(2, k + 2)], dim=1)
