"""Mixture-of-experts causal language models: Switch (Fedus et al. 2022, top-1 routing) and
GLaM (Du et al. 2022, top-2), with and without Elliptical Attention, in the CompeteSMoE shapes
the Elliptical Attention paper adopts (https://arxiv.org/abs/2406.13770, Section 4.5; sizes,
routing, `aux_loss` and training: docs/language-models.md, "Mixture-of-experts models").

`MoELM` is `TransformerLM` with mixture-of-experts feed-forward layers, so it keeps
TransformerLM's forward contract; after each forward `model.aux_loss` holds the sum of the MoE
layers' load-balancing losses (Switch Eq. 4), which `robench train` adds to the loss.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from timm.layers import Mlp
from torch import Tensor, nn

from robench._core.errors import ConfigError
from robench.models.layers.mixture_of_experts import MixtureOfExperts
from robench.models.zoo.lm_registry import register_variants
from robench.models.zoo.transformer_lm import TransformerLM, build_variant

__all__ = ["SWITCH_NANO_ARGS", "MoELM", "moe_layer_plan", "moe_layers", "total_aux_loss"]


def moe_layers(model: nn.Module) -> list[MixtureOfExperts]:
    """The model's mixture-of-experts layers, in the order they run."""
    return [m for m in model.modules() if isinstance(m, MixtureOfExperts)]


def total_aux_loss(model: nn.Module) -> Tensor | None:
    """The sum of the load-balancing losses of `model`'s MoE layers from its last forward;
    None when it has none."""
    layers = moe_layers(model)
    if not layers:
        return None
    return sum((layer.aux_loss for layer in layers[1:]), layers[0].aux_loss)


def moe_layer_plan(
    num_experts: int = 4, top_k: int = 1, moe_every: int = 1
) -> Callable[[int], Any]:
    """Block index -> its feed-forward class: a mixture of experts in blocks 0, moe_every,
    2 * moe_every, ...; timm's dense `Mlp` in the others."""
    if not isinstance(moe_every, int) or isinstance(moe_every, bool) or moe_every < 1:
        raise ConfigError(
            f"moe_every must be an integer >= 1 (1: Switch, every block; 2: GLaM, every other "
            f"block), got {moe_every!r}."
        )
    moe = functools.partial(MixtureOfExperts, num_experts=num_experts, top_k=top_k)
    return lambda index: moe if index % moe_every == 0 else Mlp


class MoELM(TransformerLM):
    """`TransformerLM` with mixture-of-experts feed-forward layers (see the module docstring):
    `num_experts` per MoE layer, `top_k` experts per token (1: Switch, 2: GLaM), a MoE layer in
    every `moe_every`-th block from the first; `kwargs` are `TransformerLM`'s, `mlp_dim` each
    expert's hidden width."""

    def __init__(
        self,
        vocab_size: int,
        *,
        num_experts: int = 4,
        top_k: int = 1,
        moe_every: int = 1,
        **kwargs: Any,
    ) -> None:
        plan = moe_layer_plan(num_experts, top_k, moe_every)
        super().__init__(vocab_size, mlp_layer_at=plan, **kwargs)
        self.num_experts, self.top_k, self.moe_every = num_experts, top_k, moe_every
        self.aux_loss: Tensor | None = None

    @classmethod
    def robench_report_section(cls, models: list[TransformerLM]) -> tuple[str, dict[str, Any]]:
        """robench's report hook: TransformerLM's section plus the experts and routing."""
        name, section = super().robench_report_section(models)
        model = models[0]
        assert isinstance(model, MoELM)
        experts = {
            "experts": model.num_experts,
            "top_k": model.top_k,
            "moe_layers": len(moe_layers(model)),
        }
        return name, {**section, **experts}

    def forward(self, tokens: Tensor) -> Tensor:
        """Next-token logits (B, T, V); sets `self.aux_loss` (load balancing, summed)."""
        logits = super().forward(tokens)
        self.aux_loss = total_aux_loss(self)
        return logits


# Switch: every block's feed-forward is a mixture of experts, top-1; GLaM: every other, top-2.
_SWITCH = dict(moe_every=1, top_k=1, dropout=0.1)
_GLAM = dict(moe_every=2, top_k=2, dropout=0.1)
_NANO = dict(embed_dim=64, depth=4, num_heads=4, mlp_dim=128, num_experts=4)
_SWITCH_NANO: dict[str, Any] = {**_SWITCH, **_NANO}
SWITCH_NANO_ARGS = dict(_SWITCH_NANO)  # what switch_classifier_nano (text_classifier.py) reuses
_GLAM_NANO: dict[str, Any] = {**_GLAM, **_NANO}


def _competesmoe(routing: dict[str, Any], embed_dim: int, depth: int) -> dict[str, Any]:
    """CompeteSMoE's small and medium shapes: 8 heads, 16 experts each as wide as the model."""
    wide = dict(embed_dim=embed_dim, depth=depth, num_heads=8, mlp_dim=embed_dim, num_experts=16)
    return {**routing, **wide}


_SWITCH_SMALL, _SWITCH_MEDIUM = _competesmoe(_SWITCH, 128, 3), _competesmoe(_SWITCH, 352, 6)
_GLAM_SMALL, _GLAM_MEDIUM = _competesmoe(_GLAM, 144, 6), _competesmoe(_GLAM, 352, 8)


# Each also as NAME_elliptical, Elliptical Attention in blocks 2..N (the module docstring).
globals().update(
    register_variants(
        __name__,
        functools.partial(build_variant, MoELM),
        {
            "switch_lm_nano": _SWITCH_NANO,
            "switch_lm_small": _SWITCH_SMALL,
            "switch_lm_medium": _SWITCH_MEDIUM,
            "glam_lm_nano": _GLAM_NANO,
            "glam_lm_small": _GLAM_SMALL,
            "glam_lm_medium": _GLAM_MEDIUM,
        },
    )
)
