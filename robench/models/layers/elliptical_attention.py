"""Elliptical Attention: self-attention under a parameter-free Mahalanobis metric.

Paper: Nielsen, Abdullaev, Teo, Nguyen, "Elliptical Attention", NeurIPS 2024,
https://arxiv.org/abs/2406.13770

For every attention layer l >= 2 (the first one has no previous values and stays standard),
per sample b and head h, with values V_l of shape (B, H, N, D) straight from the qkv projection:

    m[b,h,i] = (1/N) * sum_n |V_l[b,h,n,i] - V_{l-1}[b,h,n,i]| / delta      (Eq. 10)
    m[b,h,:] = m[b,h,:] / max_i m[b,h,i]                                     (max-scaling)
    H        = softmax((Q * m) @ K^T / sqrt(D)) @ V                          (Eq. 13)

M = diag(m) is diagonal, so `Q * m` goes straight into `F.scaled_dot_product_attention`: no
extra N x N work. M is computed without gradient (as in the paper) unless the layer is
`differentiable`, which adaptive attacks need to avoid gradient masking.

Variants (paper Appendix F.11 and D), chosen with `configure_elliptical`:

- `scaling="mean"`: m / mean_i m instead of m / max_i m.
- `estimator="random"`: m ~ U[0, 1] per (b, h, i) from torch's global RNG, then scaled. The model
  is randomized: two forward passes of the same input differ (`layer.randomized` is True).
- `estimator="consistent"` (Eq. 62): m_i = mean_n ||f(k_n + t e_i) - f(k_n - t e_i)||_1 / (2t)
  with f(x) = softmax(x K^T / sqrt(D)) V the layer's own attention estimator and t = delta.
  It costs 2 D extra attention evaluations per layer and ignores attention masks.
- `causal_estimator="prefix"` (values estimator only): a running mean over positions <= t, so
  query t uses its own m[t] and no future token leaks into it. The paper's `"full"` estimator
  averages over all N positions, which lets token t see later tokens through M.

Degenerate case: when the scaling denominator (max or mean of m) is zero, e.g. V_l == V_{l-1},
the estimate carries no information about direction-wise variability and M becomes the identity
(standard attention) for that sample and head; no NaN appears in outputs or gradients.

Cross-layer state: the layers of one model share a small carry object that hands V_{l-1} to
layer l within one forward pass. `configure_elliptical(model)` sets it up (the zoo builders call
it); the first layer of each forward overwrites it and the last one clears it. Blocks must run in
order, once per forward: gradient checkpointing (which re-runs blocks in backward) is unsupported.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from timm.layers import Attention
from torch import Tensor, nn

from robench._core.errors import ConfigError

__all__ = [
    "EllipticalAttention",
    "EllipticalMetricMixin",
    "configure_elliptical",
    "consistent_weights",
    "elliptical_weights",
    "is_elliptical",
    "set_differentiable",
]

logger = logging.getLogger(__name__)

# Upper bound on the elements of one (B, H, chunk, N, N) block of the consistent estimator.
_CONSISTENT_CHUNK_ELEMENTS = 1 << 24


class _ValueCarry:
    """Hands V_{l-1} from one elliptical layer to the next within one forward pass.

    `owned` marks a private copy (made when autograd is off) that the next layer may overwrite.
    Copies and pickles start empty; `copy.deepcopy`'s memo keeps one shared carry per model.
    """

    __slots__ = ("owned", "values")

    def __init__(self) -> None:
        self.values: Tensor | None = None
        self.owned = False

    def put(self, values: Tensor | None, owned: bool = False) -> None:
        self.values, self.owned = values, owned

    def take(self) -> tuple[Tensor | None, bool]:
        values, owned = self.values, self.owned
        self.put(None)
        return values, owned

    def __reduce__(self) -> tuple[type[_ValueCarry], tuple[()]]:
        return (_ValueCarry, ())


# ---------------------------------------------------------------------------------------------
# Scaling of the raw estimate: the denominator per (b, h[, n]).


_SCALINGS: dict[str, Callable[[Tensor], Tensor]] = {
    "max": lambda m: m.amax(dim=-1, keepdim=True),
    "mean": lambda m: m.mean(dim=-1, keepdim=True),
}


def _scale(m: Tensor, scaling: str) -> Tensor:
    """m / denominator over the last (head-dim) axis; M = identity where the denominator is 0.

    m >= 0, so a zero max or mean means m == 0 there: adding 1 to both sides gives m = 1
    (standard attention) without 0/0 in values or gradients.
    """
    denom = _SCALINGS[scaling](m)  # (B, H, 1|N, 1)
    one = (denom <= torch.finfo(m.dtype).tiny).to(m.dtype)  # 1 where uninformative, else 0
    if m.requires_grad:
        return (m + one) / (denom + one)
    return m.add_(one).div_(denom.add_(one))  # m is this layer's own buffer: no copies


# ---------------------------------------------------------------------------------------------
# Estimators of the raw (unscaled) m, up to a positive factor per (b, h, n) that the scaling
# divides out: the mean over N positions of Eq. 10 is the sum / (N * delta), the prefix mean at
# position t the running sum / (t * delta). Leaving the divisions out saves a pass over the
# (B, H, N, D) tensor in every layer; the scaled m is the same.


# Reduction over positions n of a per-position quantity (B, H, N, D).
_CAUSAL_ESTIMATORS: dict[str, Callable[[Tensor], Tensor]] = {
    "full": lambda per_position: per_position.sum(dim=2, keepdim=True),  # (B, H, 1, D)
    "prefix": lambda per_position: per_position.cumsum(dim=2),  # row t sums positions n <= t
}


def _abs_diff(v: Tensor, v_prev: Tensor, owned: bool) -> Tensor:
    """|V_l - V_{l-1}|, in place in the carried copy when the caller owns it."""
    diff = v_prev.sub_(v) if owned else v_prev - v  # (B, H, N, D)
    return diff.abs() if diff.requires_grad else diff.abs_()


def elliptical_weights(
    v: Tensor,
    v_prev: Tensor,
    *,
    delta: float = 1.0,
    scaling: str = "max",
    causal_estimator: str = "full",
) -> Tensor:
    """The scaled diagonal of M (Eq. 10) from the values `v` of this layer and `v_prev` of the
    previous one, both (B, H, N, D); `delta` cancels out under scaling. m is (B, H, 1, D) for
    causal_estimator "full" (mean over all N), (B, H, N, D) for "prefix" (running mean over
    n <= t)."""
    _check_options(scaling, "values", delta, causal_estimator)
    raw = _CAUSAL_ESTIMATORS[causal_estimator](_abs_diff(v, v_prev, owned=False))
    return _scale(raw, scaling)


def _consistent_raw(k: Tensor, v: Tensor, t: float, scale: float) -> Tensor:
    """Unscaled Eq. 62 with f(x) = softmax(x K^T * scale) V, evaluated at every key k_n."""
    B, H, N, D = k.shape
    base = (k @ k.transpose(-2, -1)) * scale  # (B, H, N, N): row n is query k_n
    shifts = k.transpose(-2, -1) * (t * scale)  # (B, H, D, N): row i is t e_i . k_j * scale
    chunk = max(1, _CONSISTENT_CHUNK_ELEMENTS // max(1, B * H * N * N))
    parts = []
    for start in range(0, D, chunk):
        shift = shifts[:, :, start : start + chunk, None, :]  # (B, H, c, 1, N)
        plus = (base[:, :, None] + shift).softmax(dim=-1)  # (B, H, c, N, N)
        minus = (base[:, :, None] - shift).softmax(dim=-1)
        delta_f = (plus - minus) @ v[:, :, None]  # (B, H, c, N, Dv)
        parts.append(delta_f.abs().sum(dim=-1).mean(dim=-1) / (2 * t))  # (B, H, c)
    return torch.cat(parts, dim=-1)[:, :, None, :]  # (B, H, 1, D)


def consistent_weights(
    k: Tensor, v: Tensor, *, t: float = 1.0, scaling: str = "max", scale: float | None = None
) -> Tensor:
    """The scaled diagonal of M from the consistent estimator (Eq. 62), (B, H, 1, D): keys `k`
    (B, H, N, D) are both the keys of f and the points where f is probed, values `v`
    (B, H, N, Dv), `t` the half-width of the centred difference, `scale` f's logit scale
    (default 1 / sqrt(D))."""
    _check_options(scaling, "consistent", t, "full")
    scale = k.shape[-1] ** -0.5 if scale is None else scale
    return _scale(_consistent_raw(k, v, t, scale), scaling)


def _values_estimate(
    layer: EllipticalMetricMixin, k: Tensor, v: Tensor, v_prev: Tensor | None, owned: bool
) -> Tensor:
    if v_prev is None:
        raise RuntimeError(
            "EllipticalAttention found no values of a previous layer: the first elliptical layer "
            "must run before the others in every forward pass (gradient checkpointing and "
            "running blocks out of order are not supported)."
        )
    if v_prev.shape != v.shape:
        raise RuntimeError(
            f"EllipticalAttention values of shape {tuple(v.shape)} do not match the previous "
            f"layer's {tuple(v_prev.shape)}; all elliptical layers of a model need equal heads."
        )
    reduce = _CAUSAL_ESTIMATORS[layer.causal_estimator]
    return reduce(_abs_diff(v, v_prev, owned))


def _consistent_estimate(
    layer: EllipticalMetricMixin, k: Tensor, v: Tensor, v_prev: Tensor | None, owned: bool
) -> Tensor:
    return _consistent_raw(k, v, layer.delta, layer.scale)


@dataclass(frozen=True)
class _Estimator:
    # (layer, k, v, v_prev, owned) -> unscaled m; `owned`: v_prev may be overwritten in place
    estimate: Callable[[EllipticalMetricMixin, Tensor, Tensor, Tensor | None, bool], Tensor]
    uses_previous_values: bool
    randomized: bool
    causal_estimators: tuple[str, ...]


_ESTIMATORS: dict[str, _Estimator] = {
    "values": _Estimator(_values_estimate, True, False, ("full", "prefix")),
    # (B, H, 1, D) from torch's global RNG
    "random": _Estimator(
        lambda _, k, *__: torch.rand(*k.shape[:2], 1, k.shape[-1], device=k.device, dtype=k.dtype),
        False,
        True,
        ("full",),
    ),
    "consistent": _Estimator(_consistent_estimate, False, False, ("full",)),
}


def _check_choice(what: str, value: object, table: dict[str, Any]) -> None:
    if not isinstance(value, str) or value not in table:
        raise ConfigError(f"Unknown elliptical {what} {value!r}; choose one of {sorted(table)}.")


def _check_options(scaling: str, estimator: str, delta: float, causal_estimator: str) -> None:
    _check_choice("scaling", scaling, _SCALINGS)
    _check_choice("estimator", estimator, _ESTIMATORS)
    _check_choice("causal_estimator", causal_estimator, _CAUSAL_ESTIMATORS)
    allowed = _ESTIMATORS[estimator].causal_estimators
    if causal_estimator not in allowed:
        raise ConfigError(
            f"causal_estimator {causal_estimator!r} is not defined for estimator {estimator!r}; "
            f"choose one of {list(allowed)}."
        )
    ok = isinstance(delta, (int, float)) and not isinstance(delta, bool)
    if not (ok and math.isfinite(delta) and delta > 0):
        raise ConfigError(f"Elliptical delta must be a finite number > 0, got {delta!r}.")


# ---------------------------------------------------------------------------------------------
# The layer.


def _attn_bias(n: int, logits: Tensor, attn_mask: Tensor | None, is_causal: bool) -> Tensor | None:
    """Additive bias with `F.scaled_dot_product_attention`'s mask semantics."""
    if is_causal:
        return logits.new_full((n, n), float("-inf")).triu_(1)
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        return torch.zeros_like(attn_mask, dtype=logits.dtype).masked_fill_(~attn_mask, -math.inf)
    return attn_mask


class EllipticalMetricMixin:
    """Options, robench hooks and the metric M of an elliptical attention layer.

    Mixed in before an attention module that computes per-head keys and values of shape
    (B, H, N, D) and has a logit `scale`: the module calls `self._metric(k, v)` in its forward
    and multiplies Q by the result (see `EllipticalAttention.forward`). `configure_elliptical`
    links every module of a model that has this mixin, so attention layers of another layout
    (FAN's token mixing, robench/models/layers/fan.py) share the carry of V_{l-1} with no copy of
    this logic. Options live in plain attributes, set by `configure_elliptical`.
    """

    scale: float  # the host attention's logit scale, 1 / sqrt(D) (the consistent estimator's f)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scaling = "max"
        self.estimator = "values"
        self.causal_estimator = "full"
        self.differentiable = False
        self.delta = 1.0
        self.is_first = False
        self.is_last = False
        self.carry: _ValueCarry | None = None

    @property
    def randomized(self) -> bool:
        """True when M is random, i.e. two forward passes of one input differ."""
        return _ESTIMATORS[self.estimator].randomized and not self.is_first

    @contextlib.contextmanager
    def robench_adaptive_attack(self) -> Iterator[None]:
        """robench's adaptive-attack hook: gradients flow through M inside the block."""
        previous, self.differentiable = self.differentiable, True
        try:
            yield
        finally:
            self.differentiable = previous

    @classmethod
    def robench_report_section(
        cls, layers: list[EllipticalMetricMixin]
    ) -> tuple[str, dict[str, Any]]:
        """robench's report hook: the options of the model's elliptical layers."""
        last = layers[-1]
        options = ("scaling", "estimator", "differentiable", "delta", "causal_estimator")
        # The first layer has no previous values and stays standard: count the layers using M.
        using_m = sum(not layer.is_first for layer in layers)
        return "elliptical", {"layers": using_m, **{name: getattr(last, name) for name in options}}

    def _elliptical_repr(self) -> str:
        return (
            f"scaling={self.scaling!r}, estimator={self.estimator!r}, "
            f"causal_estimator={self.causal_estimator!r}, differentiable={self.differentiable}, "
            f"delta={self.delta}, is_first={self.is_first}"
        )

    def _carry(self) -> _ValueCarry:
        if self.carry is None:
            raise ConfigError(
                f"{type(self).__name__} is not configured; call "
                "robench.models.layers.configure_elliptical(model) once after building the model."
            )
        return self.carry

    def _metric(self, k: Tensor, v: Tensor) -> Tensor | None:
        """The scaled diagonal of M for this forward (None in the first layer); hands on V_l."""
        carry = self._carry()
        estimator = _ESTIMATORS[self.estimator]
        v_prev, owned = carry.take()
        m = None
        if not self.is_first:
            with torch.set_grad_enabled(self.differentiable and torch.is_grad_enabled()):
                raw = estimator.estimate(self, k, v, v_prev, owned)
                m = _scale(raw, self.scaling)  # (B, H, 1|N, D)
        if self.is_last or not estimator.uses_previous_values:
            return m
        if v.requires_grad:  # autograd keeps qkv alive anyway: share it, no copy
            carry.put(v if self.differentiable else v.detach())
        elif owned and not self.is_first and v_prev is not None:  # reuse the spent buffer
            carry.put(v_prev.copy_(v), owned=True)
        else:  # a compact private copy instead of keeping the whole (3, B, H, N, D) qkv alive
            carry.put(v.clone(memory_format=torch.contiguous_format), owned=True)
        return m


class EllipticalAttention(EllipticalMetricMixin, Attention):
    """timm `Attention` with the Elliptical metric M in the logits (see the module docstring).

    Takes exactly timm's `Attention` constructor arguments and has the same parameters, so
    `VisionTransformer(attn_layer=EllipticalAttention)` loads a plain ViT/DeiT checkpoint
    strictly. Options are those of `EllipticalMetricMixin`, set by `configure_elliptical`. Set
    `layer.fused_attn = False` for the explicit-softmax reference path.

    The fused path scales the Q part of the qkv projection's output in place (unless M carries
    gradient), so a forward hook on `qkv` that keeps its output sees Q * m there.
    """

    def extra_repr(self) -> str:
        return f"{self._elliptical_repr()}, fused_attn={self.fused_attn}"

    def forward(
        self, x: Tensor, attn_mask: Tensor | None = None, is_causal: bool = False
    ) -> Tensor:
        B, N, _ = x.shape
        gate = getattr(self, "gate", None)
        gate_values = gate(x).sigmoid() if gate is not None else None
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # (B, H, N, D) each; select views allow in-place ops
        q, k = self.q_norm(q), self.k_norm(k)
        m = self._metric(k, v)  # (B, H, 1, D), (B, H, N, D) for "prefix", or None

        if self.fused_attn:
            if m is not None:
                # In place unless M carries gradient: autograd then saves only m for this product
                # and attention saves the qkv tensor it saves anyway, not a second copy of Q.
                q = q * m if m.requires_grad else q.mul_(m)  # (B, H, N, D)
            x = F.scaled_dot_product_attention(
                q,
                k,
                v,
                attn_mask=attn_mask,
                dropout_p=self.attn_drop.p if self.training else 0.0,
                is_causal=is_causal,
            )  # (B, H, N, D)
        else:
            q = q * self.scale
            if m is not None:
                q = q * m
            attn = q @ k.transpose(-2, -1)  # (B, H, N, N)
            bias = _attn_bias(N, attn, attn_mask, is_causal)
            if bias is not None:
                attn = attn + bias
            attn = self.attn_drop(attn.softmax(dim=-1))
            x = attn @ v  # (B, H, N, D)

        x = x.transpose(1, 2).reshape(B, N, self.num_heads * self.head_dim)  # (B, N, H * D)
        x = self.norm(x)
        if gate_values is not None:
            x = x * gate_values
        return self.proj_drop(self.proj(x))


# ---------------------------------------------------------------------------------------------
# Model-level helpers.


def _elliptical_layers(model: nn.Module) -> list[EllipticalMetricMixin]:
    return [m for m in model.modules() if isinstance(m, EllipticalMetricMixin)]


def configure_elliptical(
    model: nn.Module,
    *,
    scaling: str = "max",
    estimator: str = "values",
    differentiable: bool = False,
    delta: float = 1.0,
    causal_estimator: str = "full",
) -> int:
    """Set the options of every elliptical layer in `model` (the modules with
    `EllipticalMetricMixin`: `EllipticalAttention`, FAN's `EllipticalTokenMixing`) and link them
    in `model.modules()` order, the order blocks run in: the first one is standard attention
    that only stores its values, and all share one carry for V_{l-1}. Returns how many there
    are (0: none); a ConfigError for an option that is not one of the allowed values. The
    options are the module docstring's variants; `differentiable` lets gradients flow through
    M (adaptive attacks), `delta` is the step size of Eq. 10, or the half-width t of Eq. 62.
    """
    _check_options(scaling, estimator, delta, causal_estimator)
    if not isinstance(differentiable, bool):
        raise ConfigError(f"Elliptical differentiable must be a bool, got {differentiable!r}.")
    layers = _elliptical_layers(model)
    if not layers:
        logger.warning("configure_elliptical: %s has no EllipticalAttention layer", type(model))
    carry = _ValueCarry()
    for index, layer in enumerate(layers):
        layer.scaling, layer.estimator, layer.delta = scaling, estimator, float(delta)
        layer.causal_estimator, layer.differentiable = causal_estimator, differentiable
        layer.is_first, layer.is_last = index == 0, index == len(layers) - 1
        layer.carry = carry
    logger.debug("configured %d elliptical layers (%s, %s)", len(layers), estimator, scaling)
    return len(layers)


# A model builder's kwargs that configure_elliptical takes (the LM adds its M estimator).
ELLIPTICAL_OPTIONS = ("scaling", "estimator", "differentiable", "delta")


def elliptical_options(
    kwargs: dict[str, Any], names: tuple[str, ...], variant: str, elliptical: bool, twin: str = ""
) -> dict[str, Any]:
    """The options `names` popped out of a model builder's `kwargs`; a ConfigError for a model
    of standard attention, pointing at its elliptical `twin` ("": `{variant}_elliptical`)."""
    options = {name: kwargs.pop(name) for name in names if name in kwargs}
    if options and not elliptical:
        raise ConfigError(
            f"{variant} uses standard attention, so the elliptical options {sorted(options)} do "
            f"not apply; use {twin or variant + '_elliptical'}."
        )
    return options


def is_elliptical(model: nn.Module) -> bool:
    """True when `model` contains at least one elliptical layer (`EllipticalMetricMixin`)."""
    return any(isinstance(m, EllipticalMetricMixin) for m in model.modules())


class set_differentiable:
    """Let gradients flow through M (True) or not (False) in every elliptical layer of `model`.

    Takes effect at once; used as a context manager it restores the previous flags on exit::

        with set_differentiable(model, True):
            loss = criterion(model(x_adv), y)  # adaptive attack sees M's dependence on x

    A model without elliptical layers is left unchanged.
    """

    def __init__(self, model: nn.Module, flag: bool) -> None:
        if not isinstance(flag, bool):
            raise ConfigError(f"set_differentiable flag must be True or False, got {flag!r}.")
        self._layers = _elliptical_layers(model)
        self._previous = [layer.differentiable for layer in self._layers]
        for layer in self._layers:
            layer.differentiable = flag

    def __enter__(self) -> set_differentiable:
        return self

    def __exit__(self, *exc: object) -> None:
        for layer, flag in zip(self._layers, self._previous, strict=True):
            layer.differentiable = flag
