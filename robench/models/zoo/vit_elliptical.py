"""Vision Transformers with Elliptical Attention (https://arxiv.org/abs/2406.13770) in timm's
own registry: DeiT configurations whose DeiT checkpoints load strictly, and the Fashion-MNIST
nano pair (docs/models.md, "robench's zoo").
"""

from __future__ import annotations

from typing import Any

from timm.models import generate_default_cfgs
from timm.models.vision_transformer import VisionTransformer

from robench.models.layers.elliptical_attention import EllipticalAttention
from robench.models.zoo._timm_variant import (
    FASHION_MNIST_ARGS,
    FASHION_MNIST_CFG,
    create_variant,
    register_timm_variants,
    weightless_cfg,
)

__all__: list[str] = []  # timm's register_model appends the model names


def _create_vit(
    variant: str, pretrained: bool, elliptical: bool, kwargs: dict[str, Any]
) -> VisionTransformer:
    """Build `variant` from `kwargs` with timm's builder."""
    feature_cfg = dict(out_indices=kwargs.pop("out_indices", 3), feature_cls="getter")
    model: VisionTransformer = create_variant(
        VisionTransformer,
        variant,
        pretrained,
        elliptical,
        kwargs,
        attn_layer=EllipticalAttention,
        loads=" (a DeiT/ViT checkpoint of the same size loads strictly)",
        feature_cfg=feature_cfg,
    )
    return model


def _deit_cfg(**kwargs: Any) -> dict[str, Any]:
    """DeiT's default cfg (timm deit.py) without weights."""
    return weightless_cfg(
        **{
            "crop_pct": 0.9,
            "first_conv": "patch_embed.proj",
            "classifier": "head",
            "license": "apache-2.0",
            **kwargs,
        }
    )


_DEIT: dict[str, Any] = dict(patch_size=16, depth=12)


# DeiT-tiny, -small and -base with Elliptical Attention, and the Fashion-MNIST pair.
_VARIANTS: dict[str, tuple[bool, dict[str, Any]]] = {
    "deit_tiny_elliptical_patch16_224": (True, dict(_DEIT, embed_dim=192, num_heads=3)),
    "deit_small_elliptical_patch16_224": (True, dict(_DEIT, embed_dim=384, num_heads=6)),
    "deit_base_elliptical_patch16_224": (True, dict(_DEIT, embed_dim=768, num_heads=12)),
    "vit_nano_patch4_28": (False, FASHION_MNIST_ARGS),
    "vit_nano_elliptical_patch4_28": (True, FASHION_MNIST_ARGS),
}
_NANO_CFG: dict[str, Any] = dict(crop_pct=1.0, **FASHION_MNIST_CFG)
default_cfgs = generate_default_cfgs(
    {
        name: _deit_cfg(**(_NANO_CFG if args is FASHION_MNIST_ARGS else {}))
        for name, (_, args) in _VARIANTS.items()
    }
)
globals().update(register_timm_variants(__name__, _create_vit, _VARIANTS))
