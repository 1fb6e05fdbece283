"""Long Range Arena classifiers as the Elliptical Attention paper configures them (Sec. 4.3,
App. F.9, after the LRA setup of Chen et al. 2023 and Nystromformer's LRA code; models,
kwargs and padding: docs/sequence-classification.md, "Models").

`LRATransformer` maps token ids (B, L) to class logits (B, K); a retrieval model (`pair`)
takes two documents (B, 2, L), encodes both with the same weights and classifies
[u, v, u * v, u - v] of their pooled encodings u and v, as LRA's dual head does:

    ids    -> padded to the model's `max_length` N (longer: refused)    (B, N)
    x      = E[id] + positions (+ a CLS token in front), dropout         (B, N[+1], C)
    x      = pre-norm timm Blocks, padding masked out of the keys        (B, N[+1], C)
    pooled = LayerNorm(x) averaged over the real tokens, or the CLS row  (B, C)
    logits = Linear(ReLU(Linear(pooled)))                                (B, K)

The `*_elliptical` models use `EllipticalAttention` (https://arxiv.org/abs/2406.13770) in
their last two blocks, the first of which only hands its values on (the paper's final layer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from timm.layers import Attention
from torch import Tensor, nn

from robench._core.errors import ConfigError, DataError
from robench.models.layers.elliptical_attention import (
    ELLIPTICAL_OPTIONS,
    EllipticalAttention,
    configure_elliptical,
    elliptical_options,
)
from robench.models.zoo.lm_registry import register_variants
from robench.models.zoo.transformer_lm import (
    check_sizes,
    init_linear,
    sinusoidal_positions,
    transformer_blocks,
)

__all__ = ["LRA_TASKS", "SEQUENCE_CLASSIFICATION", "LRATransformer"]

SEQUENCE_CLASSIFICATION = "sequence-classification"
# The five LRA tasks (Tay et al. 2021); a model records the one it was trained on.
LRA_TASKS = ("listops", "text", "retrieval", "image", "pathfinder")


def _learned_positions(length: int, dim: int) -> nn.Parameter:
    """LRA's learned position embeddings, normal with std 0.02."""
    return nn.Parameter(torch.randn(length, dim) * 0.02)


_POSITIONS: dict[str, Callable[[int, int], Tensor]] = {
    "learned": _learned_positions,
    "sinusoidal": sinusoidal_positions,
}
_POOLINGS = ("mean", "cls")
_SIZES = ("vocab_size", "num_classes", "max_length", "embed_dim", "depth", "num_heads", "mlp_dim")


def _choice(what: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(
            f"LRATransformer {what} must be one of {list(allowed)}, got {value!r}; pick one."
        )


def _check_arguments(given: dict[str, Any]) -> None:
    """One ConfigError sentence for a bad constructor argument of `LRATransformer`."""
    check_sizes("LRATransformer", given, _SIZES)
    _choice("positions", given["positions"], tuple(_POSITIONS))
    _choice("pooling", given["pooling"], _POOLINGS)
    if given["lra_task"] is not None:
        _choice("lra_task", given["lra_task"], LRA_TASKS)
    pad_id, vocab_size = given["pad_id"], given["vocab_size"]
    if pad_id is not None and not (isinstance(pad_id, int) and 0 <= pad_id < vocab_size):
        raise ConfigError(
            f"LRATransformer pad_id {pad_id!r} is not a token id in [0, {vocab_size}); pass "
            "the data's padding id."
        )


class LRATransformer(nn.Module):
    """LRA sequence classifier (see the module docstring); arguments as `TransformerLM`'s, and:

    `vocab_size` includes padding; `max_length` N is the longest sequence it reads (longer
    ones are refused); `pad_id` pads shorter ones (masked out; None: fixed length); `pair`: a
    retrieval model taking two documents (B, 2, L); `lra_task`: the LRA task it was trained on
    (recorded; data of that task by default); `mlp_dim` also sizes the classifier head;
    `positions` "learned" (LRA's) or "sinusoidal"; `pooling` "mean" over the real tokens
    (LRA's) or "cls"; `elliptical_blocks`: how many of the last blocks use
    `EllipticalAttention` (2: the final layer, fed by the one before).
    """

    robench_task = SEQUENCE_CLASSIFICATION
    positions: Tensor  # (N[+1], C): a parameter when learned, a buffer when fixed

    def __init__(
        self,
        vocab_size: int,
        num_classes: int = 2,
        *,
        max_length: int = 2000,
        pad_id: int | None = None,
        pair: bool = False,
        lra_task: str | None = None,
        embed_dim: int = 64,
        depth: int = 2,
        num_heads: int = 2,
        mlp_dim: int = 128,
        dropout: float = 0.1,
        attn_dropout: float = 0.1,
        positions: str = "learned",
        pooling: str = "mean",
        elliptical_blocks: int = 0,
        architecture: str = "lra_transformer",
    ) -> None:
        super().__init__()
        given = locals()
        _check_arguments(given)
        self.vocab_size, self.num_classes, self.max_length = vocab_size, num_classes, max_length
        self.pad_id, self.pair, self.lra_task = pad_id, bool(pair), lra_task
        self.embed_dim, self.depth, self.pooling = embed_dim, depth, pooling
        self.architecture = architecture
        # What robench.diagnostics.find_transformer reads.
        self.has_class_token = pooling == "cls"
        self.num_prefix_tokens = int(self.has_class_token)

        self.token_embed = nn.Embedding(vocab_size, embed_dim)
        nn.init.normal_(self.token_embed.weight, std=0.02)  # as LRA's embeddings
        self.cls_token = nn.Parameter(torch.zeros(embed_dim)) if self.has_class_token else None
        length = max_length + self.num_prefix_tokens
        made = _POSITIONS[positions](length, embed_dim)
        if isinstance(made, nn.Parameter):
            self.positions = made
        else:
            self.register_buffer("positions", made, persistent=False)
        self.embed_drop = nn.Dropout(dropout)
        first_elliptical = depth - min(elliptical_blocks, depth)
        self.blocks = transformer_blocks(
            given, lambda index: EllipticalAttention if index >= first_elliptical else Attention
        )
        self.norm = nn.LayerNorm(embed_dim)
        pooled = embed_dim * (4 if self.pair else 1)  # retrieval: [u, v, u * v, u - v]
        self.head = nn.Sequential(
            nn.Linear(pooled, mlp_dim), nn.ReLU(), nn.Linear(mlp_dim, num_classes)
        )
        self.blocks.apply(init_linear)
        self.head.apply(init_linear)

    def _padded(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """Token ids (B, N) padded to `max_length`, and the mask of real tokens (B, N)."""
        batch, length = tokens.shape
        if length > self.max_length:
            raise DataError(
                f"{self.architecture} reads at most {self.max_length} tokens but got a "
                f"sequence of {length}; evaluate data of at most {self.max_length} tokens, or "
                "a model trained with a larger max_length."
            )
        real = torch.ones_like(tokens, dtype=torch.bool)
        if self.pad_id is not None:
            real = tokens != self.pad_id
        fill = self.max_length - length
        if fill:
            tokens = torch.cat([tokens, tokens.new_full((batch, fill), self.pad_id or 0)], 1)
            real = torch.cat([real, real.new_zeros((batch, fill))], dim=1)
        return tokens, real

    def _check_ids(self, tokens: Tensor) -> None:
        if tokens.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise DataError(
                f"{self.architecture} expects integer token ids, got {tokens.dtype}; pass the "
                "token ids of an LRA dataset."
            )
        expected = 3 if self.pair else 2
        if tokens.dim() != expected or (self.pair and tokens.shape[1] != 2):
            shape = "(batch, 2, length): two documents" if self.pair else "(batch, length)"
            raise DataError(
                f"{self.architecture} expects token ids of shape {shape}, got "
                f"{tuple(tokens.shape)}; {'pair the documents' if self.pair else 'pass one'} "
                "sequence per sample."
            )
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size):
            raise DataError(
                f"{self.architecture} got token ids from {int(tokens.min())} to "
                f"{int(tokens.max())}, outside its vocabulary [0, {self.vocab_size}); evaluate "
                "data of the vocabulary it was trained on."
            )

    def encode(self, tokens: Tensor) -> Tensor:
        """Pooled encodings (B, C) of token ids (B, L)."""
        ids, real = self._padded(tokens.long())
        x = self.token_embed(ids)  # (B, N, C)
        if self.cls_token is not None:
            cls = self.cls_token.expand(len(x), 1, -1).to(x.dtype)
            x = torch.cat([cls, x], dim=1)  # (B, N + 1, C)
            real = torch.cat([real.new_ones((len(x), 1)), real], dim=1)
        x = self.embed_drop(x + self.positions.to(x.dtype))
        # Keys at padding take no part; a row without real tokens attends to all (no NaN).
        keys = real | ~real.any(dim=1, keepdim=True)  # (B, N)
        # (B, 1, 1, N): SDPA's boolean mask, True = attend; none when every key is real, which
        # lets SDPA take its fused kernels (pixel tasks: no padding).
        mask = None if bool(keys.all()) else keys[:, None, None, :]
        for block in self.blocks:
            x = block(x, attn_mask=mask)  # (B, N, C)
        x = self.norm(x)
        if self.cls_token is not None:
            return x[:, 0]  # (B, C)
        keep = real[..., None].to(x.dtype)  # (B, N, 1)
        return (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)  # (B, C); empty: 0

    def forward(self, tokens: Tensor) -> Tensor:
        """Class logits (B, K) of token ids (B, L), or of document pairs (B, 2, L)."""
        self._check_ids(tokens)
        if not self.pair:
            return self.head(self.encode(tokens))
        both = self.encode(tokens.flatten(0, 1)).view(len(tokens), 2, -1)  # (B, 2, C)
        u, v = both[:, 0], both[:, 1]
        return self.head(torch.cat([u, v, u * v, u - v], dim=-1))  # (B, K)


def _create(
    variant: str, vocab_size: int, elliptical: bool, kwargs: dict[str, Any]
) -> LRATransformer:
    """Build `variant` from `kwargs`; elliptical options applied."""
    options = elliptical_options(kwargs, ELLIPTICAL_OPTIONS, variant, elliptical)
    if "elliptical_blocks" in kwargs:
        raise ConfigError(
            f"{variant} fixes where Elliptical Attention goes (nowhere in a baseline, the final "
            "layer in an *_elliptical model); leave elliptical_blocks out."
        )
    blocks = 2 if elliptical else 0  # the final layer, fed by the values of the one before
    model = LRATransformer(vocab_size, architecture=variant, elliptical_blocks=blocks, **kwargs)
    if elliptical:
        configure_elliptical(model, causal_estimator="full", **options)
    return model


# The paper's LRA configuration (App. F.9; Nystromformer's lra_config.py).
_PAPER: dict[str, Any] = dict(
    embed_dim=64, depth=2, num_heads=2, mlp_dim=128, dropout=0.1, attn_dropout=0.1
)
_NANO: dict[str, Any] = dict(
    embed_dim=32, depth=2, num_heads=2, mlp_dim=64, dropout=0.1, attn_dropout=0.1, max_length=512
)


# Each also as NAME_elliptical, Elliptical Attention on the final layer (the module docstring).
globals().update(
    register_variants(
        __name__,
        _create,
        {"lra_transformer": _PAPER, "lra_transformer_nano": _NANO},
        SEQUENCE_CLASSIFICATION,
    )
)
