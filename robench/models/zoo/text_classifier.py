"""Transformer text classifiers over a word-level vocabulary, with and without Elliptical
Attention, on a dense or a Switch (mixture-of-experts) backbone (registered models, the fixed
length and the Switch protocol: docs/text-classification.md, "Registered models").

`TextClassifier` maps word ids (B, T), with `PAD_ID` (-1) after each text's last word
(data/text/classifier_tokens.py), to class logits (B, K):

    ids    -> padded with -1 or cut to the model's own `max_length` L      (B, L)
    x      = E[id] * sqrt(C), or the learned pad embedding at padding      (B, L, C)
    x      = x + sinusoidal positions, dropout
    x      = bidirectional pre-norm timm Blocks, then LayerNorm             (B, L, C)
    pooled = mean of x over the text's positions (0 for an empty text)    (B, C)
    logits = Linear(pooled)                                              (B, K)

Every row has the same length L, so no attention mask is needed and a row's logits never
depend on its batch, even under Elliptical Attention's "full" estimator of M. The backbone's
state_dict keys (`token_embed`, `blocks`, `norm`) are the language models', so a pretrained
LM's weights load into the classifier by name (`backbone_keys`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from timm.layers import Attention
from torch import Tensor, nn

from robench._core.errors import DataError
from robench.data.text.classifier_tokens import PAD_ID
from robench.models.layers.elliptical_attention import (
    ELLIPTICAL_OPTIONS,
    EllipticalAttention,
    configure_elliptical,
    elliptical_options,
)
from robench.models.zoo.lm_registry import register_variants
from robench.models.zoo.moe_lm import SWITCH_NANO_ARGS, moe_layer_plan, total_aux_loss
from robench.models.zoo.transformer_lm import (
    check_sizes,
    init_linear,
    sinusoidal_positions,
    transformer_blocks,
)

__all__ = ["PRETRAINED_BACKBONES", "TEXT_CLASSIFICATION", "TextClassifier", "backbone_keys"]

TEXT_CLASSIFICATION = "text-classification"
# Model kwargs of a mixture-of-experts backbone (moe_lm.moe_layer_plan).
_MOE_OPTIONS = ("num_experts", "top_k", "moe_every")
_SIZES = ("vocab_size", "num_classes", "max_length", "embed_dim", "depth", "num_heads", "mlp_dim")
_BACKBONE_PREFIXES = ("token_embed.", "blocks.", "norm.")
# classifier -> the language model whose pretrained backbone (`backbone_keys`) it takes: the
# same width, depth, heads, feed-forward layers and attention. `--init-from` checks it.
PRETRAINED_BACKBONES = {
    "text_classifier_nano": "transformer_lm_nano",
    "text_classifier_nano_elliptical": "transformer_lm_nano_elliptical",
    "switch_classifier_nano": "switch_lm_nano",
    "switch_classifier_nano_elliptical": "switch_lm_nano_elliptical",
}


def backbone_keys(state_dict: dict[str, Tensor]) -> dict[str, Tensor]:
    """The entries of a language model's (or classifier's) state_dict that a classifier's
    backbone shares: token embedding, blocks and final norm, not a head."""
    return {k: v for k, v in state_dict.items() if k.startswith(_BACKBONE_PREFIXES)}


class TextClassifier(nn.Module):
    """Bidirectional transformer text classifier (see the module docstring); arguments as
    `TransformerLM`'s, and `num_classes` K and `max_length` L, the words the model reads
    (longer texts are cut, shorter ones padded)."""

    robench_task = TEXT_CLASSIFICATION
    positions: Tensor  # (L, C) sinusoidal positions, a non-persistent buffer

    def __init__(
        self,
        vocab_size: int,
        num_classes: int = 2,
        *,
        max_length: int = 64,
        embed_dim: int = 64,
        depth: int = 4,
        num_heads: int = 4,
        mlp_dim: int = 256,
        dropout: float = 0.1,
        attn_dropout: float = 0.0,
        attn_layer: type[nn.Module] = Attention,
        mlp_layer_at: Callable[[int], Any] | None = None,  # Any: a class or a partial of one
        architecture: str = "text_classifier",
    ) -> None:
        super().__init__()
        given = locals()
        check_sizes("TextClassifier", given, _SIZES)
        self.vocab_size, self.num_classes, self.max_length = vocab_size, num_classes, max_length
        self.embed_dim, self.depth, self.num_heads = embed_dim, depth, num_heads
        self.architecture = architecture
        # What robench.diagnostics.find_transformer reads: no class or register tokens.
        self.num_prefix_tokens = 0
        self.has_class_token = False
        self.aux_loss: Tensor | None = None  # load balancing of MoE blocks, set by forward

        self.token_embed = nn.Embedding(vocab_size, embed_dim)
        self.pad_embed = nn.Parameter(torch.zeros(embed_dim))
        self.embed_drop = nn.Dropout(dropout)
        self.blocks = transformer_blocks(given, lambda _: attn_layer, mlp_layer_at)
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)
        self.blocks.apply(init_linear)
        init_linear(self.head)
        # As TransformerLM: the sqrt(C)-scaled embedding has unit variance.
        nn.init.normal_(self.token_embed.weight, std=embed_dim**-0.5)
        self.register_buffer(
            "positions", sinusoidal_positions(max_length, embed_dim), persistent=False
        )

    def fit_length(self, tokens: Tensor) -> Tensor:
        """`tokens` (B, T) padded with PAD_ID or cut to (B, max_length)."""
        if tokens.dim() != 2 or tokens.dtype not in (torch.int64, torch.int32):
            raise DataError(
                f"{self.architecture} expects integer word ids of shape (batch, length), got "
                f"{tuple(tokens.shape)} of {tokens.dtype}; encode texts with "
                "robench.data.text.classifier_tokens.encode_texts."
            )
        length = tokens.shape[1]
        if length >= self.max_length:
            return tokens[:, : self.max_length].long()
        pad = tokens.new_full((tokens.shape[0], self.max_length - length), PAD_ID)
        return torch.cat([tokens, pad], dim=1).long()

    def _embed(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """Embedded positions (B, L, C) and the mask of the text's own positions (B, L)."""
        if tokens.numel() and (int(tokens.min()) < PAD_ID or int(tokens.max()) >= self.vocab_size):
            raise DataError(
                f"{self.architecture} got word ids outside [0, {self.vocab_size}) and the "
                f"padding id {PAD_ID} (from {int(tokens.min())} to {int(tokens.max())}); "
                "encode texts with the checkpoint's vocabulary."
            )
        words = tokens != PAD_ID  # (B, L)
        x = self.token_embed(tokens.clamp(min=0)) * math.sqrt(self.embed_dim)  # (B, L, C)
        x = torch.where(words[..., None], x, self.pad_embed.to(x.dtype))  # (B, L, C)
        return x + self.positions.to(x.dtype), words

    def forward(self, tokens: Tensor) -> Tensor:
        """Class logits (B, K) of word ids `tokens` (B, T), PAD_ID after each text."""
        x, words = self._embed(self.fit_length(tokens))
        x = self.embed_drop(x)
        for block in self.blocks:
            x = block(x)  # (B, L, C), every position sees every other
        x = self.norm(x)
        keep = words[..., None].to(x.dtype)  # (B, L, 1)
        pooled = (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)  # (B, C); empty: 0
        self.aux_loss = total_aux_loss(self)
        return self.head(pooled)  # (B, K)


def _create(
    variant: str, vocab_size: int, elliptical: bool, kwargs: dict[str, Any]
) -> TextClassifier:
    """Build `variant` from `kwargs`; MoE and elliptical options applied."""
    options = elliptical_options(kwargs, ELLIPTICAL_OPTIONS, variant, elliptical)
    moe = {name: kwargs.pop(name) for name in _MOE_OPTIONS if name in kwargs}
    if moe:
        kwargs["mlp_layer_at"] = moe_layer_plan(**moe)
    attn: type[nn.Module] = EllipticalAttention if elliptical else Attention
    model = TextClassifier(vocab_size, architecture=variant, attn_layer=attn, **kwargs)
    if elliptical:
        configure_elliptical(model, causal_estimator="full", **options)
    return model


_NANO: dict[str, Any] = dict(
    embed_dim=64, depth=4, num_heads=4, mlp_dim=256, max_length=64, dropout=0.1
)
# switch_lm_nano's backbone (moe_lm.py) read over 64 words.
_SWITCH_NANO: dict[str, Any] = dict(SWITCH_NANO_ARGS, max_length=64)


# Each also as NAME_elliptical, Elliptical Attention in blocks 2..4 (the module docstring).
globals().update(
    register_variants(
        __name__,
        _create,
        {"text_classifier_nano": _NANO, "switch_classifier_nano": _SWITCH_NANO},
        TEXT_CLASSIFICATION,
    )
)
