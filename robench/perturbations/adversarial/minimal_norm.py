"""The `minimal-norm` kind: each sample's smallest adversarial perturbation, by FMN
(robench's `fmn.py`) or FAB (torchattacks), and its norm as a per-sample column; what is
scored and the columns: docs/formats.md, "Minimal-norm attacks" and "Attack columns".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from robench.perturbations.adversarial.fmn import MinimalNormFound, fmn
from robench.perturbations.adversarial.params import MinimalNormParams
from robench.perturbations.base import ColumnsPerturbation
from robench.perturbations.checks import (
    in_pixel_space,
    isolated_attack,
    project_onto_ball,
    scored_prediction,
)
from robench.perturbations.threat_models import NORMS

# FAB keeps only adversarials within its own eps; this one keeps every one it finds, so that
# the norms above the cap are known too.
_FAB_UNCAPPED = {"linf": 1.0, "l2": 1e6}


def _run_fmn(
    params: MinimalNormParams, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor
) -> MinimalNormFound:
    return fmn(
        model,
        images,
        labels,
        norm=params.norm,
        steps=params.steps,
        step_size=params.resolved_step_size,
        gamma=params.gamma,
        cap=params.eps,
    )


def _run_fab(
    params: MinimalNormParams, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor
) -> MinimalNormFound:
    import torchattacks

    with torch.no_grad():
        classes = int(model(images[:1]).shape[-1])
    attack = torchattacks.FAB(
        model,
        norm=NORMS[params.norm].name,  # "Linf", "L2": torchattacks' spelling
        eps=_FAB_UNCAPPED[params.norm],
        steps=params.steps,
        n_restarts=1,
        n_classes=classes,
    )
    adv = in_pixel_space(attack, images.device)(images, labels).clamp(0, 1)
    with torch.no_grad():
        wrong = scored_prediction(model(adv)) != labels  # (B,), decided as scoring decides
    length = NORMS[params.norm].distance(adv - images)
    norm = torch.where(wrong, length, torch.full_like(length, math.inf))
    first = torch.full_like(labels, -1)  # FAB's iterations are not reachable
    return MinimalNormFound(
        best=torch.where(wrong.view(-1, 1, 1, 1), adv, images), norm=norm, first_success=first
    )


_METHODS: dict[str, Callable[..., MinimalNormFound]] = {"fmn": _run_fmn, "fab": _run_fab}


class MinimalNorm(ColumnsPerturbation):
    """The smallest adversarial per sample (FMN or FAB); scored at the cap `eps`."""

    Params = MinimalNormParams
    params: MinimalNormParams

    def perturb_with_columns(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> tuple[torch.Tensor, dict[str, list[Any]]]:
        """The smallest adversarial within the cap (else the clean image), and its columns."""
        p = self.params
        if images.shape[0] == 0:
            return images.detach().clone(), {name: [] for name in p.columns}
        clean, targets = images.detach(), labels.detach()
        with isolated_attack(model, seed, images.device):
            found = _METHODS[p.method](p, model, clean, targets)
        inside = (found.norm <= p.eps).view(-1, *(1,) * (clean.dim() - 1))
        adv = torch.where(inside, found.best, clean)
        adv = project_onto_ball(adv, clean, p.eps, name="MinimalNorm", threat=self.threat_model)
        norms = [None if math.isinf(n) else n for n in found.norm.tolist()]
        columns: dict[str, list[Any]] = {"min_norm": norms}
        if p.method == "fmn":
            columns["first_success"] = [None if k < 0 else k for k in found.first_success.tolist()]
        return adv, columns
