"""Per-pixel cross-entropy of a segmentation model, the loss dense attacks ascend.

Logits (B, K, h, w) are compared with int64 label maps at the label resolution; ignored and
padded pixels are left out of every sum and count. Plain cross-entropy is the mean over scored
pixels (mmsegmentation's `avg_non_ignore=True`); SegPGD (Gu et al., ECCV 2022,
arXiv:2207.12391, Eq. 4 and Algorithm 1) weights it at step t of T (t = 1 .. T):

    L_t = (1 - lambda_t) / N * sum_{j correct} CE_j + lambda_t / N * sum_{k wrong} CE_k,
    lambda_t = (t - 1) / (2 T),

where "correct" means the current arg-max equals the label and N is the number of scored
pixels (the paper's H x W: both sums over all pixels, not their own set's size); CosPGD's
reference code (Agnihotri and Keuper, `segpgd_scale`) has the same schedule.

`per_sample_pixel_cross_entropy` returns each sample's own mean, which attacks sum so that a
sample's gradient does not depend on its batch; `pixel_cross_entropy` averages over the batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from robench.data.segmentation.label_maps import (
    IGNORE_INDEX,
    label_sizes,
    logits_at_labels,
    scored_pixels,
)


def segpgd_weight(step: int, steps: int) -> float:
    """SegPGD's lambda_t = (t - 1) / (2 T) for step t of T (t counts from 1)."""
    if not 1 <= step <= steps:
        raise ValueError(f"step must be in 1 .. {steps}, got {step}")
    return (step - 1) / (2 * steps)


def _sums_and_counts(
    logits: torch.Tensor,
    labels: torch.Tensor,
    weighting: float | None,
    label_smoothing: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(B,) summed (weighted) cross-entropy over each sample's scored pixels, and their counts."""
    sums, counts = [], []
    sizes = label_sizes(labels)
    resized = logits_at_labels(logits, labels, sizes)
    for sample_logits, label_map, size in zip(resized, labels, sizes, strict=True):
        target = scored_pixels(label_map, size)  # (Hl, Wl), IGNORE_INDEX included
        scored = target != IGNORE_INDEX  # (Hl, Wl)
        ce = F.cross_entropy(
            sample_logits[None],
            target[None],
            ignore_index=IGNORE_INDEX,
            reduction="none",
            label_smoothing=label_smoothing,
        )[0]  # (Hl, Wl), 0 where ignored
        if weighting is not None:
            correct = sample_logits.detach().argmax(dim=0) == target  # (Hl, Wl)
            weights = torch.where(correct, 1.0 - weighting, weighting).to(ce.dtype)
            ce = ce * weights
        sums.append(ce.where(scored, torch.zeros_like(ce)).sum())
        counts.append(scored.sum())
    if not sums:
        empty = logits.new_zeros(0)
        return empty, empty
    return torch.stack(sums), torch.stack(counts).to(logits.dtype)


def pixel_cross_entropy(
    logits: torch.Tensor,
    labels: torch.Tensor,
    *,
    weighting: float | None = None,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Scalar cross-entropy averaged over the scored pixels of the whole batch; with
    `weighting` = lambda, SegPGD's loss. No scored pixel gives 0 (with a zero gradient).
    `label_smoothing` is torch's (training, robench/training/objectives.py)."""
    sums, counts = _sums_and_counts(logits, labels, weighting, label_smoothing)
    return sums.sum() / counts.sum().clamp_min(1.0)


def per_sample_pixel_cross_entropy(
    logits: torch.Tensor, labels: torch.Tensor, *, weighting: float | None = None
) -> torch.Tensor:
    """(B,) each sample's `pixel_cross_entropy` over its own scored pixels (0 if none)."""
    sums, counts = _sums_and_counts(logits, labels, weighting)
    return sums / counts.clamp_min(1.0)
