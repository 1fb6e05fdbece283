"""Vision Transformers with Elliptical Attention, registered in timm's own model registry.

After `import robench.models.zoo`, `timm.create_model(name)` builds:

- `deit_{tiny,small,base}_elliptical_patch16_224`: timm's DeiT configurations with
  `EllipticalAttention` (https://arxiv.org/abs/2406.13770). Same parameters and state_dict keys
  as `deit_*_patch16_224`, so a DeiT checkpoint loads strictly. No weights are published.
- `vit_nano_patch4_28` and its twin `vit_nano_elliptical_patch4_28`: tiny Fashion-MNIST ViTs
  (28x28x1, patch 4, dim 64, depth 4, 4 heads, ~139k parameters) for tests and the demo.

The elliptical builders accept the options of `robench.models.layers.configure_elliptical` as model
kwargs, e.g. `timm.create_model("deit_tiny_elliptical_patch16_224", scaling="mean")`.
"""

from __future__ import annotations

from typing import Any

from timm.models import generate_default_cfgs, register_model
from timm.models.vision_transformer import VisionTransformer

from robench.models.layers.elliptical_attention import EllipticalAttention
from robench.models.zoo._timm_variant import FASHION_MNIST_CFG, create_variant, weightless_cfg

__all__: list[str] = []  # timm's register_model appends the model names


def _create_vit(
    variant: str, pretrained: bool, elliptical: bool, model_args: dict[str, Any], **kwargs: Any
) -> VisionTransformer:
    """Build `variant` with timm's builder; `kwargs` override `model_args`."""
    kwargs = dict(model_args, **kwargs)
    if elliptical:
        kwargs["attn_layer"] = EllipticalAttention
    feature_cfg = dict(out_indices=kwargs.pop("out_indices", 3), feature_cls="getter")
    loads = " (a DeiT/ViT checkpoint of the same size loads strictly)"
    model: VisionTransformer = create_variant(
        VisionTransformer,
        variant,
        pretrained,
        elliptical,
        kwargs,
        loads=loads,
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


default_cfgs = generate_default_cfgs(
    {
        "deit_tiny_elliptical_patch16_224": _deit_cfg(),
        "deit_small_elliptical_patch16_224": _deit_cfg(),
        "deit_base_elliptical_patch16_224": _deit_cfg(),
        "vit_nano_patch4_28": _deit_cfg(crop_pct=1.0, **FASHION_MNIST_CFG),
        "vit_nano_elliptical_patch4_28": _deit_cfg(crop_pct=1.0, **FASHION_MNIST_CFG),
    }
)

_NANO_ARGS: dict[str, Any] = dict(
    img_size=28,
    in_chans=1,
    patch_size=4,
    num_classes=10,
    embed_dim=64,
    depth=4,
    num_heads=4,
    mlp_ratio=2.0,
)


@register_model
def deit_tiny_elliptical_patch16_224(pretrained: bool = False, **kwargs: Any) -> VisionTransformer:
    """DeiT-tiny (embed 192, depth 12, 3 heads) with Elliptical Attention."""
    args = dict(patch_size=16, embed_dim=192, depth=12, num_heads=3)
    return _create_vit("deit_tiny_elliptical_patch16_224", pretrained, True, args, **kwargs)


@register_model
def deit_small_elliptical_patch16_224(pretrained: bool = False, **kwargs: Any) -> VisionTransformer:
    """DeiT-small (embed 384, depth 12, 6 heads) with Elliptical Attention."""
    args = dict(patch_size=16, embed_dim=384, depth=12, num_heads=6)
    return _create_vit("deit_small_elliptical_patch16_224", pretrained, True, args, **kwargs)


@register_model
def deit_base_elliptical_patch16_224(pretrained: bool = False, **kwargs: Any) -> VisionTransformer:
    """DeiT-base (embed 768, depth 12, 12 heads) with Elliptical Attention."""
    args = dict(patch_size=16, embed_dim=768, depth=12, num_heads=12)
    return _create_vit("deit_base_elliptical_patch16_224", pretrained, True, args, **kwargs)


@register_model
def vit_nano_patch4_28(pretrained: bool = False, **kwargs: Any) -> VisionTransformer:
    """Tiny Fashion-MNIST ViT with standard attention (the baseline of the nano pair)."""
    return _create_vit("vit_nano_patch4_28", pretrained, False, _NANO_ARGS, **kwargs)


@register_model
def vit_nano_elliptical_patch4_28(pretrained: bool = False, **kwargs: Any) -> VisionTransformer:
    """`vit_nano_patch4_28` with Elliptical Attention: same parameters, same state_dict keys."""
    return _create_vit("vit_nano_elliptical_patch4_28", pretrained, True, _NANO_ARGS, **kwargs)
