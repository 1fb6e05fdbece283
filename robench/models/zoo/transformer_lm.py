"""Decoder-only causal transformer language models, with and without Elliptical Attention
(sizes, options, the tied head and `m_estimator`: docs/language-models.md, "Registered models").

`TransformerLM` maps word ids (B, T) to next-token logits (B, T, V): token embedding scaled by
sqrt(C) plus sinusoidal positions (Vaswani et al. 2017, no parameters, so any length works),
dropout, timm's pre-norm `Block`s run with `is_causal=True`, a final LayerNorm and an output
head tied to the token embedding: logits = LayerNorm(h) @ E^T. The `*_elliptical` twins put
`EllipticalAttention` (https://arxiv.org/abs/2406.13770) in layers 2..N, same parameters and
state_dict keys; `m_estimator` "prefix" (default) keeps them causal, "paper" lets position t
see later tokens through M.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from timm.layers import Attention, Mlp
from timm.models.vision_transformer import Block
from torch import Tensor, nn

from robench._core.errors import ConfigError, DataError
from robench.models.layers.elliptical_attention import (
    ELLIPTICAL_OPTIONS,
    EllipticalAttention,
    configure_elliptical,
    elliptical_options,
)
from robench.models.zoo.lm_registry import register_variants

__all__ = ["TransformerLM", "build_variant", "sinusoidal_positions"]

_LM = TypeVar("_LM", bound="TransformerLM")
# m_estimator of a language model -> causal_estimator of configure_elliptical.
_M_ESTIMATORS = {"prefix": "prefix", "paper": "full"}
# Model kwargs that go to configure_elliptical instead of TransformerLM.
_ELLIPTICAL_OPTIONS = (*ELLIPTICAL_OPTIONS, "m_estimator")


def sinusoidal_positions(
    length: int, dim: int, *, device: torch.device | None = None, dtype: torch.dtype | None = None
) -> Tensor:
    """Vaswani et al.'s encoding, (length, dim): sin at even channels, cos at odd ones."""
    position = torch.arange(length, device=device, dtype=torch.float32)[:, None]  # (T, 1)
    channels = torch.arange(0, dim, 2, device=device, dtype=torch.float32)  # (ceil(C/2),)
    angles = position * torch.exp(channels * (-math.log(10000.0) / dim))  # (T, ceil(C/2))
    pe = torch.empty(length, dim, device=device, dtype=torch.float32)
    pe[:, 0::2] = angles.sin()
    pe[:, 1::2] = angles.cos()[:, : dim // 2]
    return pe.to(dtype or torch.get_default_dtype())


def init_linear(module: nn.Module) -> None:
    """timm ViT's init for linear layers: truncated normal (std 0.02), zero bias (applied
    by every robench sequence model: language models, text classifiers, LRA models)."""
    if isinstance(module, nn.Linear):
        nn.init.trunc_normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


def check_sizes(owner: str, given: dict[str, Any], names: tuple[str, ...]) -> None:
    """A ConfigError for a size `names` of `owner`'s arguments `given` that is no integer
    >= 1, or an `embed_dim` that `num_heads` does not divide (every sequence model's check)."""
    for what in names:
        if not isinstance(given[what], int) or isinstance(given[what], bool) or given[what] < 1:
            raise ConfigError(f"{owner} {what} must be an integer >= 1, got {given[what]!r}.")
    if given["embed_dim"] % given["num_heads"]:
        raise ConfigError(
            f"{owner} embed_dim {given['embed_dim']} is not a multiple of num_heads "
            f"{given['num_heads']}; choose embed_dim = num_heads * head dimension."
        )


def transformer_blocks(
    given: dict[str, Any],
    attn_layer_at: Callable[[int], Any],
    mlp_layer_at: Callable[[int], Any] | None = None,
) -> nn.ModuleList:
    """The pre-norm timm `Block`s of a sequence model's constructor arguments `given` (width
    `embed_dim`, `depth`, `num_heads`, feed-forward `mlp_dim`, `dropout`, `attn_dropout`), the
    attention (and feed-forward) class of each chosen by its index."""
    embed_dim, mlp_dim = given["embed_dim"], given["mlp_dim"]
    return nn.ModuleList(
        Block(
            embed_dim,
            given["num_heads"],
            mlp_ratio=(mlp_dim + 0.5) / embed_dim,  # Block takes int(C * ratio) == mlp_dim
            qkv_bias=True,
            proj_drop=given["dropout"],
            attn_drop=given["attn_dropout"],
            attn_layer=attn_layer_at(index),
            mlp_layer=mlp_layer_at(index) if mlp_layer_at else Mlp,
            depth=index,
        )
        for index in range(given["depth"])
    )


class TransformerLM(nn.Module):
    """Decoder-only causal transformer over a word-level vocabulary (see the module docstring):
    `vocab_size` V, width `embed_dim` C = num_heads * head dimension; `dropout` on the
    embeddings and the outputs of attention and feed-forward, `attn_dropout` on the attention
    probabilities. `attn_layer`: the blocks' attention (timm's contract; `EllipticalAttention`
    then needs `configure_elliptical`); `mlp_layer_at`: block index -> its feed-forward class
    (e.g. a mixture of experts), None: timm's `Mlp`; `architecture`: the name the report records.
    """

    def __init__(
        self,
        vocab_size: int,
        *,
        embed_dim: int = 128,
        depth: int = 16,
        num_heads: int = 8,
        mlp_dim: int = 2048,
        dropout: float = 0.1,
        attn_dropout: float = 0.0,
        attn_layer: type[nn.Module] = Attention,
        mlp_layer_at: Callable[[int], Any] | None = None,  # Any: a class or a partial of one
        architecture: str = "transformer_lm",
    ) -> None:
        super().__init__()
        given = locals()
        check_sizes(
            "TransformerLM", given, ("vocab_size", "embed_dim", "depth", "num_heads", "mlp_dim")
        )
        for what, p in (("dropout", dropout), ("attn_dropout", attn_dropout)):
            if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0 <= p < 1:
                raise ConfigError(f"TransformerLM {what} must be in [0, 1), got {p!r}.")
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim
        self.depth = depth
        self.num_heads = num_heads
        self.mlp_dim = mlp_dim
        self.architecture = architecture
        # What robench.diagnostics.find_transformer reads: no class or register tokens.
        self.num_prefix_tokens = 0
        self.has_class_token = False

        self.token_embed = nn.Embedding(vocab_size, embed_dim)
        self.embed_drop = nn.Dropout(dropout)
        self.blocks = transformer_blocks(given, lambda _: attn_layer, mlp_layer_at)
        self.norm = nn.LayerNorm(embed_dim)
        self.blocks.apply(init_linear)
        # Embedding init as in Vaswani et al. / fairseq: the sqrt(C)-scaled embedding has unit
        # variance and the tied head starts with logits of order 1.
        nn.init.normal_(self.token_embed.weight, std=embed_dim**-0.5)

    @property
    def m_estimator(self) -> str | None:
        """ "prefix" or "paper" from the elliptical layers' estimator; None without them."""
        layers = [m for m in self.modules() if isinstance(m, EllipticalAttention)]
        if not layers:
            return None
        by_causal = {causal: name for name, causal in _M_ESTIMATORS.items()}
        return by_causal[layers[-1].causal_estimator]

    @classmethod
    def robench_report_section(cls, models: list[TransformerLM]) -> tuple[str, dict[str, Any]]:
        """robench's report hook: the language model's shape and its estimator of M."""
        model = models[0]
        return "language_model", {
            "architecture": model.architecture,
            "layers": model.depth,
            "embed_dim": model.embed_dim,
            "heads": model.num_heads,
            "vocab_size": model.vocab_size,
            "m_estimator": model.m_estimator,
        }

    def forward(self, tokens: Tensor) -> Tensor:
        """Next-token logits (B, T, V) of `tokens` (B, T); position t sees tokens <= t only
        (with the "paper" estimator of M, later tokens also reach it through M)."""
        if tokens.dim() != 2:
            raise DataError(
                f"TransformerLM expects token ids of shape (batch, length), got shape "
                f"{tuple(tokens.shape)}; add a batch dimension with tokens[None]."
            )
        _, length = tokens.shape
        x = self.token_embed(tokens) * math.sqrt(self.embed_dim)  # (B, T, C)
        pe = sinusoidal_positions(length, self.embed_dim, device=x.device, dtype=x.dtype)
        x = self.embed_drop(x + pe)  # (B, T, C)
        for block in self.blocks:
            x = block(x, is_causal=True)  # (B, T, C)
        return F.linear(self.norm(x), self.token_embed.weight)  # (B, T, V), tied head


def build_variant(
    model_class: type[_LM],
    variant: str,
    vocab_size: int,
    elliptical: bool,
    kwargs: dict[str, Any],
) -> _LM:
    """`model_class(vocab_size, architecture=variant, **kwargs)`, the elliptical options of
    `kwargs` (and `m_estimator`) applied with `configure_elliptical` when `elliptical`; also
    what the mixture-of-experts language models (moe_lm.py) are built with."""
    kwargs = dict(kwargs)
    if "causal_estimator" in kwargs:
        raise ConfigError(
            f"{variant} chooses the estimator of M with m_estimator ('prefix' or 'paper'), "
            "not causal_estimator."
        )
    options = elliptical_options(kwargs, _ELLIPTICAL_OPTIONS, variant, elliptical)
    if not elliptical:
        return model_class(vocab_size, architecture=variant, **kwargs)
    m_estimator = options.pop("m_estimator", "prefix")
    if not isinstance(m_estimator, str) or m_estimator not in _M_ESTIMATORS:
        raise ConfigError(
            f"Unknown m_estimator {m_estimator!r} for {variant}; choose one of "
            f"{sorted(_M_ESTIMATORS)} ('prefix' is causal, 'paper' averages over all positions)."
        )
    model = model_class(vocab_size, architecture=variant, attn_layer=EllipticalAttention, **kwargs)
    try:
        configure_elliptical(model, causal_estimator=_M_ESTIMATORS[m_estimator], **options)
    except ConfigError as err:
        raise ConfigError(
            f"{variant} with m_estimator={m_estimator!r}: {err} (m_estimator 'prefix' is "
            "causal_estimator 'prefix', 'paper' is 'full'.)"
        ) from err
    return model


_NANO: dict[str, Any] = dict(embed_dim=64, depth=4, num_heads=4, mlp_dim=256, dropout=0.1)
_SMALL: dict[str, Any] = dict(embed_dim=128, depth=16, num_heads=8, mlp_dim=2048, dropout=0.1)
_MEDIUM: dict[str, Any] = dict(embed_dim=256, depth=16, num_heads=8, mlp_dim=2048, dropout=0.1)


# Each also as NAME_elliptical, Elliptical Attention in layers 2..N (the module docstring).
globals().update(
    register_variants(
        __name__,
        functools.partial(build_variant, TransformerLM),
        {
            "transformer_lm_nano": _NANO,
            "transformer_lm_small": _SMALL,
            "transformer_lm_medium": _MEDIUM,
        },
    )
)
