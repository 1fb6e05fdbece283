"""Segmenter: a ViT encoder and a mask-transformer decoder for semantic segmentation.

Paper: Strudel, Garcia, Laptev, Schmid, "Segmenter: Transformer for Semantic Segmentation",
ICCV 2021, https://arxiv.org/abs/2105.05633 (the Elliptical Attention paper's ADE20K setup).

    tokens  = ViT(x)[:, prefix:]                                    # (B, N, E) patch tokens
    z       = Blocks([proj(tokens), cls_emb])                       # (B, N + K, C)
    p, c    = L2norm(z[:, :N] @ W_p), L2norm(z[:, N:] @ W_c)        # (B, N, C), (B, K, C)
    masks   = LayerNorm_K(p @ c^T)                                  # (B, N, K)
    logits  = upsample(masks as (B, K, H/p, W/p), (H, W))           # bilinear

The registered sizes, their inference and input sizes: docs/models.md, "robench's zoo".
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from timm.layers import trunc_normal_
from timm.models import generate_default_cfgs
from timm.models.vision_transformer import Block, VisionTransformer
from torch import nn

from robench.models.layers.elliptical_attention import EllipticalAttention
from robench.models.sliding_window import InferenceConfig
from robench.models.zoo._timm_variant import create_variant, register_timm_variants, weightless_cfg

__all__ = ["MaskTransformer", "Segmenter"]


TASK = "semantic-segmentation"


class MaskTransformer(nn.Module):
    """Segmenter's decoder: K class embeddings attend with the patch tokens; masks are the
    cosine similarities of patches and classes, layer-normalised over the classes."""

    def __init__(
        self,
        num_classes: int,
        encoder_dim: int,
        dim: int,
        depth: int,
        num_heads: int,
        mlp_ratio: float = 4.0,
        drop_path_rate: float = 0.0,
    ) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.proj_dec = nn.Linear(encoder_dim, dim)
        self.cls_emb = nn.Parameter(torch.zeros(1, num_classes, dim))
        rates = [r.item() for r in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.Sequential(
            *[Block(dim, num_heads, mlp_ratio, qkv_bias=True, drop_path=r) for r in rates]
        )
        self.proj_patch = nn.Parameter(dim**-0.5 * torch.randn(dim, dim))
        self.proj_classes = nn.Parameter(dim**-0.5 * torch.randn(dim, dim))
        self.decoder_norm = nn.LayerNorm(dim)
        self.mask_norm = nn.LayerNorm(num_classes)
        trunc_normal_(self.cls_emb, std=0.02)

    def forward(self, tokens: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
        """Patch tokens (B, N, E) on a grid of (h, w) = N -> masks (B, K, h, w)."""
        B, N, _ = tokens.shape
        x = self.proj_dec(tokens)  # (B, N, C)
        x = torch.cat((x, self.cls_emb.expand(B, -1, -1)), dim=1)  # (B, N + K, C)
        x = self.decoder_norm(self.blocks(x))
        patches = F.normalize(x[:, :N] @ self.proj_patch, dim=-1)  # (B, N, C)
        classes = F.normalize(x[:, N:] @ self.proj_classes, dim=-1)  # (B, K, C)
        masks = self.mask_norm(patches @ classes.transpose(1, 2))  # (B, N, K)
        return masks.transpose(1, 2).reshape(B, self.num_classes, *grid)  # (B, K, h, w)


class Segmenter(nn.Module):
    """ViT encoder + mask transformer: normalised images (B, C, H, W) -> logits (B, K, H, W)."""

    robench_task = TASK

    def __init__(
        self,
        img_size: int = 512,
        patch_size: int = 16,
        in_chans: int = 3,
        num_classes: int = 150,
        embed_dim: int = 192,
        depth: int = 12,
        num_heads: int = 3,
        mlp_ratio: float = 4.0,
        decoder_dim: int | None = None,
        decoder_depth: int = 2,
        decoder_heads: int | None = None,
        drop_path_rate: float = 0.0,
        attn_layer: Any = "attn",
        inference: InferenceConfig | None = None,
    ) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.num_classes = num_classes
        self.robench_inference = inference if inference is not None else InferenceConfig()
        self.encoder = VisionTransformer(
            img_size=img_size,
            patch_size=patch_size,
            in_chans=in_chans,
            num_classes=0,
            global_pool="",
            embed_dim=embed_dim,
            depth=depth,
            num_heads=num_heads,
            mlp_ratio=mlp_ratio,
            drop_path_rate=drop_path_rate,
            dynamic_img_size=True,
            attn_layer=attn_layer,
        )
        self.decoder = MaskTransformer(
            num_classes,
            embed_dim,
            decoder_dim or embed_dim,
            decoder_depth,
            decoder_heads or num_heads,
            mlp_ratio,
            drop_path_rate,
        )

    def robench_token_encoder(self) -> nn.Module:
        """The ViT encoder: what the diagnostics read (robench/_core/model_hooks.py). The
        decoder's blocks mix patch tokens with class embeddings, so they are left out."""
        return self.encoder

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        H, W = x.shape[-2:]
        p = self.patch_size
        x = F.pad(x, (0, -W % p, 0, -H % p))  # zeros (the mean) right and bottom
        grid = (x.shape[-2] // p, x.shape[-1] // p)
        tokens = self.encoder.forward_features(x)  # (B, prefix + N, E), final norm applied
        tokens = tokens[:, self.encoder.num_prefix_tokens :]  # (B, N, E)
        masks = self.decoder(tokens, grid)  # (B, K, H'/p, W'/p)
        logits = F.interpolate(masks, size=x.shape[-2:], mode="bilinear", align_corners=False)
        return logits[:, :, :H, :W]  # (B, K, H, W)


# The decoder's attention stays standard: configure_elliptical finds the encoder's layers only.
_create_segmenter = partial(
    create_variant, Segmenter, attn_layer=EllipticalAttention, twin="its *_elliptical twin"
)


def _cfg(size: int, num_classes: int) -> dict[str, Any]:
    return weightless_cfg(
        num_classes=num_classes,
        input_size=(3, size, size),
        interpolation="bilinear",
        fixed_input_size=False,
        first_conv="encoder.patch_embed.proj",
        classifier="decoder",
        license="apache-2.0",
    )


_SHAPE = ("img_size", "patch_size", "num_classes", "embed_dim", "depth", "num_heads")
_NANO_ARGS: dict[str, Any] = dict(
    zip(_SHAPE, (64, 8, 11, 64, 4, 4), strict=True), mlp_ratio=2.0, decoder_depth=1
)
_TINY_ARGS: dict[str, Any] = dict(
    zip(_SHAPE, (512, 16, 150, 192, 12, 3), strict=True),
    decoder_depth=2,
    drop_path_rate=0.1,
    inference=InferenceConfig("slide", crop_size=(512, 512), stride=(480, 480)),
)


# CPU-sized and Segmenter-Ti models, each with standard and with Elliptical Attention in the
# encoder (the module docstring).
_VARIANTS: dict[str, tuple[bool, dict[str, Any]]] = {
    "segmenter_nano_baseline": (False, _NANO_ARGS),
    "segmenter_nano_elliptical": (True, _NANO_ARGS),
    "segmenter_tiny_baseline": (False, _TINY_ARGS),
    "segmenter_tiny_elliptical": (True, _TINY_ARGS),
}
default_cfgs = generate_default_cfgs(
    {name: _cfg(args["img_size"], args["num_classes"]) for name, (_, args) in _VARIANTS.items()}
)
globals().update(register_timm_variants(__name__, _create_segmenter, _VARIANTS))
