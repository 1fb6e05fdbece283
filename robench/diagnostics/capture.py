"""Find a timm Vision Transformer's blocks and record what flows through them: the tokens
after every block (forward hooks) and every layer's attention probabilities (a pre-hook on
`attn_drop`, with `fused_attn` off meanwhile). Why and what guards it: docs/diagnostics.md,
"How the internals are captured".
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, cast

from torch import Tensor, nn

from robench._core.errors import ConfigError
from robench._core.model_hooks import token_encoders
from robench.diagnostics.base import inference, iter_batches, model_device

__all__ = [
    "LayerRecorder",
    "TransformerParts",
    "capture_attention",
    "capture_tokens",
    "collect_layers",
    "find_transformer",
]

logger = logging.getLogger(__name__)

Reduce = Callable[[Tensor], Any]  # applied inside the hook, so big tensors need not be kept


def _keep(tensor: Tensor) -> Tensor:
    return tensor.detach().clone()


@dataclass(frozen=True)
class TransformerParts:
    """The pieces of a ViT the diagnostics use."""

    network: nn.Module  # the module that owns `blocks` (a timm VisionTransformer)
    blocks: tuple[nn.Module, ...]  # transformer blocks in execution order
    attentions: tuple[nn.Module, ...]  # `block.attn` of each block
    num_prefix_tokens: int  # class + register tokens ahead of the patch tokens
    has_class_token: bool  # token 0 is a CLS token

    @property
    def depth(self) -> int:
        return len(self.blocks)

    def patch_grid(self, n_patches: int, image_size: tuple[int, int]) -> tuple[int, int]:
        """(rows, cols) of the patch grid holding `n_patches` patch tokens."""
        embed = getattr(self.network, "patch_embed", None)
        candidates = [tuple(getattr(embed, "grid_size", None) or ())]
        patch = getattr(embed, "patch_size", None)
        if patch:
            candidates.append((image_size[0] // patch[0], image_size[1] // patch[1]))
        side = math.isqrt(n_patches)
        candidates.append((side, side))
        for grid in candidates:
            if len(grid) == 2 and grid[0] * grid[1] == n_patches:
                return int(grid[0]), int(grid[1])
        raise ConfigError(
            f"cannot arrange {n_patches} patch tokens of a {image_size} image into a grid; "
            "the model's patch_embed.grid_size / patch_size do not match its tokens."
        )


def _blocks_of(module: nn.Module) -> tuple[nn.Module, ...] | None:
    blocks = getattr(module, "blocks", None)
    if not isinstance(blocks, nn.Sequential | nn.ModuleList) or len(blocks) == 0:
        return None
    if not all(isinstance(getattr(b, "attn", None), nn.Module) for b in blocks):
        return None
    return tuple(blocks)


def find_transformer(model: nn.Module, purpose: str = "this diagnostic") -> TransformerParts:
    """The module in `model` (itself, a `NormalizedModel`'s `.model`, any wrapper's child)
    with timm-style transformer blocks: a `blocks` list whose blocks have `.attn`. A model
    that names its token encoder (`robench_token_encoder`, robench/_core/model_hooks.py) is
    searched inside that module only, so an encoder-decoder such as Segmenter has one list.
    A ConfigError, naming `purpose`, for no such blocks (a CNN) or several lists (Swin)."""
    searched = token_encoders(model) or [model]
    found = [
        (module, blocks)
        for root in searched
        for module in root.modules()
        if (blocks := _blocks_of(module))
    ]
    if not found:
        raise ConfigError(
            f"{purpose} needs a Vision Transformer with timm-style blocks (a `blocks` list of "
            f"modules with an `.attn` layer, as in timm's VisionTransformer), but "
            f"{type(model).__name__} has none; run it on a ViT/DeiT model or remove it from the "
            "suite."
        )
    if len(found) > 1:
        raise ConfigError(
            f"{purpose} supports plain (isotropic) ViTs, but {type(model).__name__} has "
            f"{len(found)} separate block lists (a hierarchical model such as Swin), so its "
            "layers have no single token sequence to compare."
        )
    network, blocks = found[0]
    has_cls = getattr(network, "cls_token", None) is not None
    return TransformerParts(
        network=network,
        blocks=blocks,
        attentions=tuple(cast(nn.Module, b.attn) for b in blocks),
        num_prefix_tokens=int(getattr(network, "num_prefix_tokens", int(has_cls))),
        has_class_token=has_cls,
    )


def _select(parts: TransformerParts, layers: Sequence[int] | None) -> list[int]:
    if layers is None:
        return list(range(parts.depth))
    chosen = [i + parts.depth if i < 0 else i for i in layers]
    bad = [i for i, c in zip(layers, chosen, strict=True) if not 0 <= c < parts.depth]
    if bad:
        raise ConfigError(f"layers {bad} do not exist; the model has {parts.depth} blocks.")
    return chosen


class LayerRecorder:
    """Records `reduce(tensor)` per captured layer; `take()` hands over one forward's records."""

    def __init__(self, layers: Sequence[int], reduce: Reduce, what: str) -> None:
        self.layers = list(layers)  # block indices, in the order `take` returns them
        self.what = what
        self._reduce = reduce
        self._records: list[list[Any]] = [[] for _ in self.layers]

    def record(self, slot: int, tensor: Tensor) -> None:
        self._records[slot].append(self._reduce(tensor.detach()))

    def take(self) -> list[Any]:
        """One record per captured layer from the forward pass(es) since the last `take`; a
        RuntimeError when a layer recorded nothing or more than once (timm's attention no
        longer calls `attn_drop` on the probabilities, or blocks ran twice)."""
        records, self._records = self._records, [[] for _ in self.layers]
        wrong = [(i, len(r)) for i, r in zip(self.layers, records, strict=True) if len(r) != 1]
        if wrong:
            raise RuntimeError(
                f"capturing {self.what}: expected one record per layer and forward pass, got "
                f"(layer, count) {wrong}. For attention, this means the attention module no "
                "longer calls `attn_drop` on the softmax probabilities when fused_attn=False."
            )
        return [r[0] for r in records]


@contextmanager
def capture_tokens(
    model: nn.Module, *, reduce: Reduce = _keep, layers: Sequence[int] | None = None
) -> Iterator[LayerRecorder]:
    """Record the output of each block, (B, N, C), while the context is open."""
    parts = find_transformer(model, "capturing token representations")
    chosen = _select(parts, layers)
    recorder = LayerRecorder(chosen, reduce, "tokens")
    with ExitStack() as restore:  # the hooks are removed on exit, also after an exception
        for slot, index in enumerate(chosen):

            def hook(module: nn.Module, args: Any, output: Any, slot: int = slot) -> None:
                if not isinstance(output, Tensor):
                    raise RuntimeError(f"block output is a {type(output).__name__}, not a tensor")
                recorder.record(slot, output)  # (B, N, C)

            restore.callback(parts.blocks[index].register_forward_hook(hook).remove)
        yield recorder


def _check_attention_module(index: int, attn: nn.Module) -> None:
    if not hasattr(attn, "fused_attn") or not isinstance(
        getattr(attn, "attn_drop", None), nn.Module
    ):
        raise ConfigError(
            f"block {index}'s attention {type(attn).__name__} has no `fused_attn` flag and "
            "`attn_drop` module (timm's Attention contract), so its attention probabilities "
            "cannot be captured."
        )


@contextmanager
def capture_attention(
    model: nn.Module, *, reduce: Reduce = _keep, layers: Sequence[int] | None = None
) -> Iterator[LayerRecorder]:
    """Record each layer's attention probabilities, (B, H, N, N), while the context is open.

    The captured layers run their explicit (non-fused) path meanwhile; others stay as they are.
    """
    parts = find_transformer(model, "capturing attention maps")
    chosen = _select(parts, layers)
    attentions: list[Any] = [parts.attentions[i] for i in chosen]  # timm Attention-like
    for index, attn in zip(chosen, attentions, strict=True):
        _check_attention_module(index, attn)
    recorder = LayerRecorder(chosen, reduce, "attention")
    with ExitStack() as restore:  # hooks and flags are restored on exit, also after an exception
        for slot, attn in enumerate(attentions):

            def pre_hook(module: nn.Module, args: tuple[Any, ...], slot: int = slot) -> None:
                recorder.record(slot, args[0])  # (B, H, N, N) softmax probabilities

            restore.callback(setattr, attn, "fused_attn", attn.fused_attn)
            attn.fused_attn = False
            restore.callback(attn.attn_drop.register_forward_pre_hook(pre_hook).remove)
        yield recorder


_CAPTURES: dict[str, Callable[..., AbstractContextManager[LayerRecorder]]] = {
    "tokens": capture_tokens,
    "attention": capture_attention,
}


def collect_layers(
    model: nn.Module,
    images: Tensor,
    *,
    what: str,
    reduce: Reduce,
    batch_size: int,
    layers: Sequence[int] | None = None,
) -> list[list[Any]]:
    """Run `model` over `images` in batches (eval mode, no grad) and capture `what`
    ("tokens" or "attention") of each layer: `records[k][b]` is `reduce` of the k-th captured
    layer's tensor for batch b."""
    if what not in _CAPTURES:
        raise ConfigError(f"cannot capture {what!r}; choose one of {sorted(_CAPTURES)}.")
    capture = _CAPTURES[what]
    device = model_device(model, images.device)
    per_batch = []
    with inference(model), capture(model, reduce=reduce, layers=layers) as recorder:
        for batch in iter_batches(images, batch_size, device):
            model(batch)
            per_batch.append(recorder.take())
    logger.debug(
        "captured %s of %d layers over %d batches", what, len(recorder.layers), len(per_batch)
    )
    return [list(layer) for layer in zip(*per_batch, strict=True)]
