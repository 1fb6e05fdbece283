"""What robench's timm-registered builders share: a pretrained cfg without weights, and one
variant of a model class built with timm's builder, standard or with Elliptical Attention."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from timm.data import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD
from timm.models import build_model_with_cfg, register_model
from torch import nn

from robench._core.errors import ConfigError
from robench.models.layers.elliptical_attention import (
    ELLIPTICAL_OPTIONS,
    configure_elliptical,
    elliptical_options,
)

# Model kwargs that go to configure_elliptical instead of the model class.
_TIMM_ELLIPTICAL_OPTIONS = (*ELLIPTICAL_OPTIONS, "causal_estimator")
# The nano models' Fashion-MNIST input: 1x28x28, normalised with the training set's mean and std.
FASHION_MNIST_CFG: dict[str, Any] = dict(
    num_classes=10, input_size=(1, 28, 28), interpolation="bilinear", mean=(0.2860,), std=(0.3530,)
)

# The nano models' arguments: that input, and patch 4, width 64, 4 blocks of 4 heads, MLP ratio 2.
FASHION_MNIST_ARGS: dict[str, Any] = dict(img_size=28, in_chans=1, num_classes=10) | dict(
    patch_size=4, embed_dim=64, depth=4, num_heads=4, mlp_ratio=2.0
)


def weightless_cfg(**kwargs: Any) -> dict[str, Any]:
    """A timm default cfg with no weights URL: 224x224 RGB ImageNet input unless `kwargs`
    say otherwise."""
    return {
        "url": "",
        "num_classes": 1000,
        "input_size": (3, 224, 224),
        "pool_size": None,
        "crop_pct": 1.0,
        "interpolation": "bicubic",
        "fixed_input_size": True,
        "mean": IMAGENET_DEFAULT_MEAN,
        "std": IMAGENET_DEFAULT_STD,
        **kwargs,
    }


def create_variant(
    model_class: Callable[..., Any],
    variant: str,
    pretrained: bool,
    elliptical: bool,
    kwargs: dict[str, Any],
    *,
    attn_layer: type[nn.Module] | None = None,
    loads: str = "",
    twin: str = "its *_elliptical_* twin",
    **build_kwargs: Any,
) -> Any:
    """`variant` of `model_class` from timm's builder with `kwargs` less the elliptical
    options, which configure the model when `elliptical` (its `attn_layer` then the elliptical
    one given). robench ships no weights: `pretrained` is refused, saying what `loads` into
    the model instead."""
    if pretrained:
        raise ConfigError(
            f"{variant} has no pretrained weights in robench; create it with pretrained=False "
            f"and load a checkpoint into it{loads}."
        )
    options = elliptical_options(kwargs, _TIMM_ELLIPTICAL_OPTIONS, variant, elliptical, twin)
    if elliptical and attn_layer is not None:
        kwargs["attn_layer"] = attn_layer
    model = build_model_with_cfg(model_class, variant, pretrained=False, **build_kwargs, **kwargs)
    if elliptical:
        configure_elliptical(model, **options)
    return model


def register_timm_variants(
    module: str, create: Callable[..., Any], variants: Mapping[str, tuple[bool, dict[str, Any]]]
) -> dict[str, Callable[..., Any]]:
    """Register with timm, for every `variants` entry (model name -> (with Elliptical
    Attention?, its arguments)), a builder that calls `create(name, pretrained, elliptical,
    kwargs laid over the arguments)`; returns them by name, for `module`'s globals (whose
    `default_cfgs` timm reads)."""
    builders = {}
    for name, (elliptical, arguments) in variants.items():
        builder = _variant(create, name, elliptical, arguments)
        builder.__module__ = module
        builders[name] = register_model(builder)
    return builders


def _variant(
    create: Callable[..., Any], name: str, elliptical: bool, arguments: dict[str, Any]
) -> Callable[..., Any]:
    def builder(pretrained: bool = False, **kwargs: Any) -> Any:
        return create(name, pretrained, elliptical, dict(arguments, **kwargs))

    builder.__name__ = builder.__qualname__ = name
    return builder
