"""Keep attacks inside their threat model and the attacked model untouched.

`check_adversarial` is what the runner calls on every batch an attack returns: same shape and
dtype as the clean images, finite, inside [0, 1] and inside the L-inf ball of radius `eps`.
`project_linf` and `isolated_attack` are what the attack adapters use to get there: a final
projection that absorbs the floating-point slack of third-party attacks, and a context that
runs a library in eval mode, under a forked RNG seeded from `seed`, with its prints kept off
stdout and the model's parameters (and their gradients) left as they were.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
from collections.abc import Iterator

import torch

from robench._core.errors import AttackCheckError
from robench._core.units import display_pixel_value
from robench.perturbations.threat_models import NORMS, ThreatModel

logger = logging.getLogger(__name__)

# Slack on the eps-ball for float32 images; lower-precision dtypes get their machine epsilon.
EPS_TOLERANCE = 1e-6


def _tolerance(dtype: torch.dtype) -> float:
    """How far past `eps` rounding may legitimately push an image of this dtype."""
    if not dtype.is_floating_point:
        return EPS_TOLERANCE
    return max(EPS_TOLERANCE, float(torch.finfo(dtype).eps))


def check_adversarial(
    clean: torch.Tensor,
    adv: torch.Tensor,
    eps: float | None,
    *,
    name: str,
    threat: ThreatModel | None = None,
) -> None:
    """Raise `AttackCheckError` unless `adv` is a valid perturbation of `clean`.

    Valid means: same shape and dtype, every value finite and in [0, 1], and (when `eps` is not
    None) distance(adv - clean) <= eps + tolerance per sample in the threat model (L-inf when
    none is given). The message names the perturbation, how many samples fail and by how much.
    """
    if adv.shape != clean.shape or adv.dtype != clean.dtype:
        raise AttackCheckError(
            f"Perturbation {name!r} returned images of shape {tuple(adv.shape)} and dtype "
            f"{adv.dtype}, expected {tuple(clean.shape)} and {clean.dtype}; it must return one "
            "perturbed image per input image, unchanged in layout."
        )
    if adv.numel() == 0:
        return
    batch = adv.shape[0]
    flat = adv.detach().reshape(batch, -1)

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

    if eps is None:
        return
    threat = threat or NORMS["linf"]
    dist = threat.distance(flat.double() - clean.detach().reshape(batch, -1).double())  # (B,)
    over = dist > eps + _tolerance(adv.dtype)
    if bool(over.any()):
        worst = float(dist.max())
        raise AttackCheckError(
            f"Perturbation {name!r} left the eps-ball in {int(over.sum())} of {batch} samples: "
            f"max {threat.name} distance {worst:.6g} ({threat.display(worst)}) > eps {eps:.6g} "
            f"({threat.display(eps)}); eps must be in pixel units and the attack must "
            "project onto the ball."
        )


def project_linf(adv: torch.Tensor, clean: torch.Tensor, eps: float, *, name: str) -> torch.Tensor:
    """Project `adv` onto the L-inf ball of radius `eps` around `clean`, intersected with [0, 1].

    In-ball values come back bit-for-bit unchanged; the projection only absorbs the rounding
    slack some libraries leave (SPSA's `x + dx`). A larger excess is logged as a warning, since
    it means the library itself ignored the budget.
    """
    adv = adv.detach().to(clean.dtype)
    excess = float((adv - clean).abs().max()) - eps if adv.numel() else 0.0
    if excess > _tolerance(clean.dtype):
        logger.warning(
            "%s returned images %.3g past eps = %s; projecting them back onto the ball.",
            name,
            excess,
            display_pixel_value(eps),
        )
    return NORMS["linf"].project(adv, clean, eps).clamp_(0.0, 1.0)


def _forked_rng(device: torch.device) -> contextlib.AbstractContextManager[None]:
    """Fork the CPU RNG and, on CUDA, the RNG of `device`, so seeding inside stays local."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return torch.random.fork_rng(devices=[index], device_type="cuda")
    return torch.random.fork_rng(devices=[], device_type="cpu")


@contextlib.contextmanager
def isolated_attack(model: torch.nn.Module, seed: int, device: torch.device) -> Iterator[None]:
    """Run an attack library on `model` without side effects outside this block.

    Inside: gradients are enabled (even when the caller runs under `torch.no_grad()` or
    inference mode), the model is in eval mode, its parameters do not require grad (gradients
    flow to the input only, and libraries that call `.backward()` cannot write `.grad` into
    the model), torch's RNG is forked and seeded with `seed`, and anything printed to stdout
    is captured and logged at debug level. On exit the model's mode, `requires_grad` flags,
    the caller's RNG state and any active `sys.settrace` hook (AutoAttack's checks reset it)
    are restored.
    """
    was_training = model.training
    if was_training:
        logger.warning("The model was in train mode; attacking it in eval mode.")
    params = list(model.parameters())
    requires_grad = [p.requires_grad for p in params]
    trace = sys.gettrace()
    captured = io.StringIO()
    try:
        model.eval()
        for p in params:
            p.requires_grad_(False)
        with (
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
        model.train(was_training)
        if sys.gettrace() is not trace:
            sys.settrace(trace)
        if captured.getvalue().strip():
            logger.debug("attack library output:\n%s", captured.getvalue().rstrip())
