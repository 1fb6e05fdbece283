"""Keep attacks inside their threat model and the attacked model untouched: `check_adversarial`
is the runner's check of every batch an attack returns (tolerances: docs/formats.md, "Threat
models"); `project_onto_ball` and `isolated_attack` are what the attack adapters use to pass it.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
from collections.abc import Iterator
from typing import Any

import torch

from robench._core.errors import AttackCheckError
from robench.perturbations.threat_models import NORMS, ThreatModel

logger = logging.getLogger(__name__)


SCORED_TOP_K = 5  # the classification tasks' kept predictions (tasks/top_k_records.TOP_K)


def scored_prediction(logits: torch.Tensor) -> torch.Tensor:
    """The class robench's scoring pass predicts from `logits` (B, K): the first of its top-k.
    A minimal-norm attack stops on the decision boundary, where two logits can tie exactly in
    float32, and argmax and topk may break a tie differently: an attack's own "found" must be
    decided as the scoring decides it, or the report would call a sample both broken (a
    minimal norm) and robust (top-1)."""
    return logits.topk(min(SCORED_TOP_K, logits.shape[-1]), dim=-1).indices[..., 0]


def ball_tolerance(threat: ThreatModel, images: torch.Tensor) -> float:
    """How far past `eps` rounding may legitimately push one sample of `images` (B, ...)."""
    n_values = images[0].numel() if images.shape[0] else 0
    # Machine epsilon: one value's relative rounding error (0 for integer dtypes).
    machine_eps = float(torch.finfo(images.dtype).eps) if images.dtype.is_floating_point else 0.0
    return threat.tolerance(n_values, machine_eps)


def check_pixel_values(images: torch.Tensor, *, name: str) -> None:
    """Raise `AttackCheckError` unless every value of `images` is finite and in [0, 1]: the
    whole check for an unbounded perturbation (a corruption), part of every other's."""
    if images.numel() == 0:
        return
    low, high = torch.aminmax(images.detach())  # one pass; a NaN fails both comparisons
    if bool(low >= 0) and bool(high <= 1):
        return
    batch = images.shape[0]
    flat = images.detach().reshape(batch, -1)

    finite = torch.isfinite(flat).all(dim=1)  # (B,)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        raise AttackCheckError(
            f"Perturbation {name!r} returned non-finite values (NaN or inf) in {bad} of {batch} "
            "samples; the attack diverged or the model's gradients are not finite."
        )

    low, high = flat.amin(dim=1), flat.amax(dim=1)  # (B,)
    outside = (low < 0) | (high > 1)
    if bool(outside.any()):
        raise AttackCheckError(
            f"Perturbation {name!r} returned values outside [0, 1] in {int(outside.sum())} of "
            f"{batch} samples (min {float(low.min()):.6g}, max {float(high.max()):.6g}); attacks "
            "must work in pixel space and clip to [0, 1]."
        )


def check_adversarial(
    clean: torch.Tensor,
    adv: torch.Tensor,
    eps: float | None,
    *,
    name: str,
    threat: ThreatModel | None = None,
) -> None:
    """Raise `AttackCheckError` unless `adv` is a valid perturbation of `clean`: same shape and
    dtype, finite, in [0, 1] and (unless `eps` is None) within eps + tolerance of it per sample."""
    if adv.shape != clean.shape or adv.dtype != clean.dtype:
        raise AttackCheckError(
            f"Perturbation {name!r} returned images of shape {tuple(adv.shape)} and dtype "
            f"{adv.dtype}, expected {tuple(clean.shape)} and {clean.dtype}; it must return one "
            "perturbed image per input image, unchanged in layout."
        )
    check_pixel_values(adv, name=name)
    if eps is None or adv.numel() == 0:
        return
    batch = adv.shape[0]
    threat = threat or NORMS["linf"]
    # Unflattened: L0 counts pixels, i.e. positions where any channel (dim 1) changed.
    dist = threat.distance(adv.detach().double() - clean.detach().double())  # (B,)
    tolerance = ball_tolerance(threat, adv)
    over = dist > eps + tolerance
    if bool(over.any()):
        worst = float(dist.max())
        raise AttackCheckError(
            f"Perturbation {name!r} left the {threat.name} eps-ball in {int(over.sum())} of "
            f"{batch} samples: max {threat.name} distance {worst:.6g} ({threat.display(worst)}) "
            f"> eps {eps:.6g} ({threat.budget_display(eps)}, tolerance {tolerance:.2g}); eps "
            "must be in pixel units on the [0, 1] scale and the attack must project onto the "
            "ball."
        )


def project_onto_ball(
    adv: torch.Tensor,
    clean: torch.Tensor,
    eps: float,
    *,
    name: str,
    threat: ThreatModel | None = None,
) -> torch.Tensor:
    """`adv` with every sample inside `check_adversarial`'s ball around `clean` and [0, 1]:
    samples the check accepts come back bit for bit (a library's result is never altered); one
    past the tolerance is logged, projected, then clipped (which only moves it closer)."""
    threat = threat or NORMS["linf"]
    adv = adv.detach().to(clean.dtype)
    if adv.numel() == 0:
        return adv
    dist = threat.distance((adv - clean).double())  # (B,)
    tolerance = ball_tolerance(threat, clean)
    outside = dist > eps + tolerance
    out_of_range = (adv < 0).flatten(1).any(dim=1) | (adv > 1).flatten(1).any(dim=1)
    if bool(outside.any()):
        logger.warning(
            "%s returned %d of %d images up to %.3g past eps = %s; projecting them back onto "
            "the ball.",
            name,
            int(outside.sum()),
            adv.shape[0],
            float(dist.max()) - eps,
            threat.budget_display(eps),
        )
    fix = outside | out_of_range  # (B,)
    if not bool(fix.any()):
        return adv
    fixed = threat.project(adv[fix], clean[fix], eps).clamp_(0.0, 1.0)
    adv = adv.clone()
    adv[fix] = fixed
    return adv


def _forked_rng(device: torch.device) -> contextlib.AbstractContextManager[None]:
    """Fork the CPU RNG and, on CUDA, the RNG of `device`, so seeding inside stays local."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return torch.random.fork_rng(devices=[index], device_type="cuda")
    return torch.random.fork_rng(devices=[], device_type="cpu")


@contextlib.contextmanager
def in_eval_mode(model: torch.nn.Module) -> Iterator[None]:
    """`model` in eval mode inside the block, its own mode restored on exit."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def in_pixel_space(attack: Any, device: torch.device) -> Any:
    """A torchattacks `attack`, set up for a model that normalises inside: torchattacks must
    not normalise (it would for a MAIR RobModel) nor switch the model to train mode, and
    cannot find the device of a model without parameters, so it is given the images'."""
    attack._set_normalization_applied(None)
    attack.normalization_used = None
    attack.set_model_training_mode(model_training=False)
    attack.set_device(device)
    return attack


@contextlib.contextmanager
def isolated_attack(model: torch.nn.Module, seed: int, device: torch.device) -> Iterator[None]:
    """Run an attack library on `model` with no side effect outside the block: gradients on, eval
    mode, parameters frozen (a library's `.backward()` writes no `.grad` into the model), torch's
    RNG forked and seeded, stdout logged at debug level; the model's mode and flags and any
    `sys.settrace` hook (AutoAttack's checks reset it) restored on exit."""
    if model.training:
        logger.warning("The model was in train mode; attacking it in eval mode.")
    params = list(model.parameters())
    requires_grad = [p.requires_grad for p in params]
    trace = sys.gettrace()
    captured = io.StringIO()
    try:
        for p in params:
            p.requires_grad_(False)
        with (
            in_eval_mode(model),
            torch.inference_mode(False),
            torch.enable_grad(),
            _forked_rng(device),
            contextlib.redirect_stdout(captured),
        ):
            torch.manual_seed(seed)
            yield
    finally:
        for p, flag in zip(params, requires_grad, strict=True):
            p.requires_grad_(flag)
        if sys.gettrace() is not trace:
            sys.settrace(trace)
        if captured.getvalue().strip():
            logger.debug("attack library output:\n%s", captured.getvalue().rstrip())
