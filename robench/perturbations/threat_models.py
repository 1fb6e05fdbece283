"""Threat models in one table (`NORMS`): each row says how far a perturbed image is from its
original, how to project back onto the ball, how much rounding slack the post-attack check
allows, and how a budget is shown. Adding a norm means one row here. Budgets are in pixel units
on the [0, 1] scale, L2 and L1 over the whole (C, H, W) tensor, L0 in changed pixels
(docs/formats.md, "Threat models"). No torch here: suites show budgets without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from robench._core.units import display_pixel_value

if TYPE_CHECKING:
    import torch

# The order q of each norm's dual, ||g||_q: the linear estimate of the distance to a decision
# boundary is margin / ||grad||_q (FMN's step, MALT's score).
DUAL_ORDER: dict[str, float] = {"linf": 1.0, "l2": 2.0}
# Smallest slack on the ball's radius, for float64 images and integer corner cases.
MIN_TOLERANCE = 1e-6


@dataclass(frozen=True)
class ThreatModel:
    """One norm ball around the clean image, in pixel units on the [0, 1] scale."""

    name: str  # shown beside eps in tables: "Linf" in "Linf 8/255"
    # (B, ...) differences -> (B,) distances per sample (the check passes float64)
    distance: Callable[[torch.Tensor], torch.Tensor]
    # (adv, clean, eps) -> adv projected onto the ball (values inside come back unchanged)
    project: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]
    # Values per sample -> the machine epsilons of rounding its distance may carry past eps;
    # None for a count (L0), which has no rounding
    roundings: Callable[[int], float] | None
    display: Callable[[float], str]  # how a budget is written: "8/255", "0.5"
    # Largest meaningful eps, checked when a suite is read (None: it depends on the image size)
    max_eps: float | None = None
    # The budget counts something (L0: changed pixels): a suite's eps must be a whole number.
    integer_budget: bool = False

    def tolerance(self, n_values: int, machine_eps: float) -> float:
        """Slack allowed past eps, for `n_values` values per sample of an image dtype's eps."""
        if self.roundings is None:
            return 0.0
        return max(MIN_TOLERANCE, self.roundings(n_values) * machine_eps)

    def budget_display(self, eps: float) -> str:
        """The budget with its norm, as reports and tables show it: "Linf 8/255", "L2 0.5"."""
        return f"{self.name} {self.display(eps)}"


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(t.shape[0], -1)


def per_sample(factor: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """(B,) -> (B, 1, ..., 1), broadcastable against `like`."""
    return factor.reshape((-1,) + (1,) * (like.dim() - 1))


# --- L-infinity: every pixel within eps of its original ----------------------------------


def _linf_distance(diff: torch.Tensor) -> torch.Tensor:
    return _flat(diff).abs().amax(dim=1)


def _linf_project(adv: torch.Tensor, clean: torch.Tensor, eps: float) -> torch.Tensor:
    return adv.clamp(min=clean - eps, max=clean + eps)


# --- L2: the Euclidean norm of the whole difference tensor ---------------------------------


def _l2_distance(diff: torch.Tensor) -> torch.Tensor:
    return _flat(diff).norm(p=2, dim=1)


def _l2_project(adv: torch.Tensor, clean: torch.Tensor, eps: float) -> torch.Tensor:
    """Scale the difference of samples outside the ball down to norm eps; samples inside come
    back bit-for-bit unchanged (clean + (adv - clean) need not round back to adv)."""
    diff = adv - clean
    norms = _l2_distance(diff.double())  # (B,)
    outside = norms > eps
    scale = (eps / norms.clamp_min(1e-30)).to(adv.dtype)  # (B,)
    projected = clean + diff * per_sample(scale, diff)
    return adv.where(~per_sample(outside, adv), projected)


# --- L1: the sum of absolute differences over the whole tensor (EAD's L1 rule) -------------


def _l1_distance(diff: torch.Tensor) -> torch.Tensor:
    return _flat(diff).abs().sum(dim=1)


def _l1_project(adv: torch.Tensor, clean: torch.Tensor, eps: float) -> torch.Tensor:
    """Euclidean projection of the difference onto the L1 ball (Duchi et al., ICML 2008,
    Fig. 1: soft-threshold |d| by the theta that leaves a sum of eps); samples inside come
    back bit-for-bit unchanged."""
    import torch

    diff = adv - clean
    flat = _flat(diff)  # (B, N)
    magnitude = flat.abs()
    ordered = magnitude.sort(dim=1, descending=True).values  # (B, N)
    ranks = torch.arange(1, flat.shape[1] + 1, device=flat.device, dtype=flat.dtype)
    cumulative = ordered.cumsum(dim=1) - eps  # (B, N)
    # rho: the last rank whose value still exceeds its share of the excess
    kept = (ordered - cumulative / ranks) > 0  # (B, N)
    rho = kept.to(flat.dtype).mul(ranks).argmax(dim=1, keepdim=True)  # (B, 1), 0-based
    theta = (cumulative.gather(1, rho) / (rho + 1).to(flat.dtype)).clamp_min(0)  # (B, 1)
    shrunk = flat.sign() * (magnitude - theta).clamp_min(0)
    projected = clean + shrunk.reshape(diff.shape)
    outside = _l1_distance(diff.double()) > eps  # (B,)
    return adv.where(~per_sample(outside, adv), projected)


# --- L0: how many pixels changed (OnePixel, Pixle, SparseFool, JSMA) ------------------------


def _changed_pixels(diff: torch.Tensor) -> torch.Tensor:
    """(B, C, H, W) -> (B, H * W) True where any channel changed; (B, N) -> (B, N)."""
    changed = diff != 0
    if changed.dim() > 2:
        changed = changed.any(dim=1)
    return _flat(changed)


def _l0_distance(diff: torch.Tensor) -> torch.Tensor:
    return _changed_pixels(diff).sum(dim=1).double()


def _l0_project(adv: torch.Tensor, clean: torch.Tensor, eps: float) -> torch.Tensor:
    """Keep the `eps` pixels that changed most (largest change over channels) and restore the
    others; samples with at most `eps` changed pixels come back unchanged."""
    import torch

    diff = adv - clean
    size = diff.abs().amax(dim=1) if diff.dim() > 2 else diff.abs()  # (B, H, W) or (B, N)
    flat = _flat(size)
    keep = torch.zeros_like(flat, dtype=torch.bool)
    budget = min(int(eps), flat.shape[1])
    if budget > 0:
        keep.scatter_(1, flat.topk(budget, dim=1).indices, True)
    keep &= flat != 0
    mask = keep.reshape(size.shape)
    if diff.dim() > 2:
        mask = mask.unsqueeze(1)  # (B, 1, H, W): every channel of a kept pixel
    return adv.where(mask, clean)


def _plain_display(eps: float) -> str:
    return f"{eps:.6g}"  # L2 and L1 budgets are plain numbers (0.5), never k/255


# The fields in order: name, distance, project, roundings, display. Roundings, as
# docs/formats.md ("Threat models") explains: L-inf's values are each one rounding of clean +-
# eps; L2 allows twice the worst sum of n half-epsilon roundings along the difference, L1 twice
# every value's added up.
NORMS: dict[str, ThreatModel] = {
    "linf": ThreatModel(
        "Linf", _linf_distance, _linf_project, lambda n: 1.0, display_pixel_value, max_eps=1.0
    ),
    "l2": ThreatModel("L2", _l2_distance, _l2_project, math.sqrt, _plain_display),
    "l1": ThreatModel("L1", _l1_distance, _l1_project, float, _plain_display),
    "l0": ThreatModel(
        "L0", _l0_distance, _l0_project, None, lambda eps: f"{eps:g} px", integer_budget=True
    ),
}
