"""Fully Attentional Networks (FAN, ViT variant), with Elliptical twins, registered in timm.

Paper: Zhou et al., "Understanding The Robustness in Vision Transformers", ICML 2022,
https://arxiv.org/abs/2204.12451; the definition follows NVlabs/FAN models/fan.py, with its
module and parameter names, so a released checkpoint's state dict loads strictly. The models,
their Elliptical twins (the paper's Table 4 "FAN-Elliptical") and their options:
docs/models.md, "robench's zoo".
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import torch
from timm.layers import DropPath, Mlp, to_2tuple, trunc_normal_
from timm.models import generate_default_cfgs
from timm.models.cait import ClassAttn
from timm.models.xcit import PositionalEncodingFourier
from torch import Tensor, nn

from robench._core.errors import ConfigError
from robench.models.layers.fan import ChannelProcessing, EllipticalTokenMixing, TokenMixing
from robench.models.zoo._timm_variant import (
    FASHION_MNIST_ARGS,
    FASHION_MNIST_CFG,
    create_variant,
    register_timm_variants,
    weightless_cfg,
)

__all__ = ["FAN", "checkpoint_filter_fn"]  # timm's register_model appends the model names

# Output width of each stride-2 conv of the patch stem, as a divisor of embed_dim, per patch
# size (released ConvPatchEmbed); GELU sits between the convs.
_STEM_DIVISORS: dict[int, tuple[int, ...]] = {16: (8, 4, 2, 1), 8: (4, 2, 1), 4: (4, 1)}
# The released blocks' norm and activation (every FAN-ViT uses these).
_NORM = partial(nn.LayerNorm, eps=1e-6)
_ACT = nn.GELU


def _conv3x3_bn(in_chans: int, out_chans: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_chans, out_chans, kernel_size=3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(out_chans),
    )


class ConvPatchEmbed(nn.Module):
    """Patch embedding by stride-2 3x3 conv+BN stages: (B, C, H, W) -> (B, N, D), (Hp, Wp)."""

    def __init__(self, patch_size: int, in_chans: int, embed_dim: int) -> None:
        super().__init__()
        if patch_size not in _STEM_DIVISORS:
            raise ConfigError(
                f"FAN's convolutional stem supports patch sizes {sorted(_STEM_DIVISORS)}, got "
                f"{patch_size}; pick one of those."
            )
        layers: list[nn.Module] = []
        width = in_chans
        for index, divisor in enumerate(_STEM_DIVISORS[patch_size]):
            if index:
                layers.append(_ACT())
            layers.append(_conv3x3_bn(width, embed_dim // divisor))
            width = embed_dim // divisor
        self.proj = nn.Sequential(*layers)
        self.patch_size = patch_size

    def forward(self, x: Tensor) -> tuple[Tensor, tuple[int, int]]:
        x = self.proj(x)  # (B, D, Hp, Wp)
        Hp, Wp = x.shape[2], x.shape[3]
        return x.flatten(2).transpose(1, 2), (Hp, Wp)


class FANBlock(nn.Module):
    """Token mixing then channel processing, each a pre-norm residual with layer scale."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mlp_ratio: float,
        qkv_bias: bool,
        drop: float,
        attn_drop: float,
        drop_path: float,
        eta: float,
        attn_layer: type[TokenMixing],
    ) -> None:
        super().__init__()
        self.norm1 = _NORM(dim)
        self.attn = attn_layer(
            dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=drop
        )
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = _NORM(dim)
        self.mlp = ChannelProcessing(
            dim,
            num_heads=num_heads,
            qkv_bias=qkv_bias,
            attn_drop=attn_drop,
            mlp_hidden_dim=int(dim * mlp_ratio),
            act_layer=_ACT,
            drop=drop,
        )
        self.gamma1 = nn.Parameter(eta * torch.ones(dim))
        self.gamma2 = nn.Parameter(eta * torch.ones(dim))

    def forward(self, x: Tensor, H: int, W: int) -> Tensor:
        x = x + self.drop_path(self.gamma1 * self.attn(self.norm1(x)))
        return x + self.drop_path(self.gamma2 * self.mlp(self.norm2(x), H, W))


class ClassAttentionBlock(nn.Module):
    """FAN's class-attention block (CaiT's class attention, FAN's residual wiring).

    As released: the patch tokens also receive gamma1 * norm1(x) in the first residual, and
    with `tokens_norm` the second residual adds norm2(x) to itself for patch tokens, while the
    class token gets gamma2 * MLP(norm2(x)). Only the class token reaches the head.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mlp_ratio: float,
        qkv_bias: bool,
        drop: float,
        attn_drop: float,
        eta: float,
        tokens_norm: bool,
    ) -> None:
        super().__init__()
        self.norm1 = _NORM(dim)
        self.attn = ClassAttn(
            dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=drop
        )
        self.norm2 = _NORM(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=_ACT, drop=drop)
        self.gamma1 = nn.Parameter(eta * torch.ones(dim))
        self.gamma2 = nn.Parameter(eta * torch.ones(dim))
        self.tokens_norm = tokens_norm

    def forward(self, x: Tensor) -> Tensor:
        x_norm1 = self.norm1(x)  # (B, 1 + N, C)
        x_attn = torch.cat([self.attn(x_norm1), x_norm1[:, 1:]], dim=1)
        x = x + self.gamma1 * x_attn
        if self.tokens_norm:
            x = self.norm2(x)
        else:
            x = torch.cat([self.norm2(x[:, 0:1]), x[:, 1:]], dim=1)
        cls_token = self.gamma2 * self.mlp(x[:, 0:1])
        return x + torch.cat([cls_token, x[:, 1:]], dim=1)


class FAN(nn.Module):
    """FAN-ViT: conv stem, Fourier positions, FAN blocks, class attention, head (timm API)."""

    def __init__(
        self,
        img_size: int | tuple[int, int] = 224,
        patch_size: int = 16,
        in_chans: int = 3,
        num_classes: int = 1000,
        embed_dim: int = 768,
        depth: int = 12,
        num_heads: int = 12,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
        drop_rate: float = 0.0,
        attn_drop_rate: float = 0.0,
        drop_path_rate: float = 0.0,
        cls_attn_layers: int = 2,
        eta: float = 1.0,
        tokens_norm: bool = False,
        attn_layer: type[TokenMixing] = TokenMixing,
        global_pool: str = "token",
    ) -> None:
        super().__init__()
        if any(side % patch_size for side in to_2tuple(img_size)):
            raise ConfigError(f"FAN needs patch_size {patch_size} to divide img_size {img_size}.")
        if global_pool != "token":
            raise ConfigError(
                f"FAN classifies its class token: global_pool must be 'token', not {global_pool!r}."
            )
        self.num_classes = num_classes
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.num_prefix_tokens = 1
        self.patch_embed = ConvPatchEmbed(patch_size, in_chans, embed_dim)
        self.pos_embed = PositionalEncodingFourier(dim=embed_dim)
        self.pos_drop = nn.Dropout(p=drop_rate)
        common: dict[str, Any] = dict(
            dim=embed_dim,
            num_heads=num_heads,
            mlp_ratio=mlp_ratio,
            qkv_bias=qkv_bias,
            drop=drop_rate,
            attn_drop=attn_drop_rate,
            eta=eta,
        )
        # As released, every block gets the same drop-path rate (no linear decay).
        self.blocks = nn.ModuleList(
            FANBlock(**common, drop_path=drop_path_rate, attn_layer=attn_layer)
            for _ in range(depth)
        )
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.cls_attn_blocks = nn.ModuleList(
            ClassAttentionBlock(**common, tokens_norm=tokens_norm) for _ in range(cls_attn_layers)
        )
        self.norm = _NORM(embed_dim)
        self.head: nn.Module = nn.Linear(embed_dim, num_classes) if num_classes else nn.Identity()
        self._init_weights()

    def _init_weights(self) -> None:
        """The released initialisation: truncated normal (0.02) for linear layers and the class
        token, unit LayerNorms, He-normal (fan-out) for the depthwise convs of the channel MLP;
        the stem and the positional projection keep torch's defaults."""
        trunc_normal_(self.cls_token, std=0.02)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Conv2d) and module.groups > 1:  # the depthwise convs
                kh, kw = module.kernel_size
                fan_out = kh * kw * module.out_channels // module.groups
                nn.init.normal_(module.weight, 0.0, (2.0 / fan_out) ** 0.5)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    @torch.jit.ignore
    def no_weight_decay(self) -> set[str]:
        return {"pos_embed", "cls_token"}

    def get_classifier(self) -> nn.Module:
        return self.head

    def reset_classifier(self, num_classes: int, global_pool: str | None = None) -> None:
        self.num_classes = num_classes
        self.head = nn.Linear(self.num_features, num_classes) if num_classes else nn.Identity()

    def forward_features(self, x: Tensor) -> Tensor:
        """Images (B, C, H, W) -> normalised tokens (B, 1 + N, D), class token first."""
        B = x.shape[0]
        x, (Hp, Wp) = self.patch_embed(x)  # (B, N, D)
        pos = self.pos_embed(B, Hp, Wp)  # (B, D, Hp, Wp)
        x = self.pos_drop(x + pos.reshape(B, -1, x.shape[1]).transpose(1, 2))
        for block in self.blocks:
            x = block(x, Hp, Wp)
        x = torch.cat([self.cls_token.expand(B, -1, -1), x], dim=1)
        for block in self.cls_attn_blocks:
            x = block(x)
        return self.norm(x)

    def forward_head(self, x: Tensor, pre_logits: bool = False) -> Tensor:
        x = x[:, 0]  # the class token
        return x if pre_logits else self.head(x)

    def forward(self, x: Tensor) -> Tensor:
        return self.forward_head(self.forward_features(x))


def checkpoint_filter_fn(state_dict: Mapping[str, Tensor], model: nn.Module) -> dict[str, Tensor]:
    """The released filter: unwrap `model`, rename `pos_embeder.` to `pos_embed.` and split a
    fused class-attention `qkv` into `q`, `k`, `v` (XCiT-style layouts)."""
    state = dict(state_dict.get("model", state_dict))  # type: ignore[arg-type]
    for key in [k for k in state if k.startswith("pos_embeder.")]:
        state[key.replace("pos_embeder.", "pos_embed.", 1)] = state.pop(key)
    for i in range(len(getattr(model, "cls_attn_blocks", ()))):
        prefix = f"cls_attn_blocks.{i}.attn."
        for kind in ("weight", "bias"):
            fused = state.pop(f"{prefix}qkv.{kind}", None)
            if fused is not None:
                for name, part in zip("qkv", fused.reshape(3, -1, *fused.shape[1:]), strict=True):
                    state[f"{prefix}{name}.{kind}"] = part
    return state


_create_fan = partial(
    create_variant,
    FAN,
    attn_layer=EllipticalTokenMixing,
    loads=" (NVlabs' FAN-ViT checkpoints of its size load strictly)",
    pretrained_filter_fn=checkpoint_filter_fn,
)


def _fan_cfg(**kwargs: Any) -> dict[str, Any]:
    """The released default cfg (no weights URL)."""
    # NVIDIA Source Code License-NC for the released weights
    return weightless_cfg(
        first_conv="patch_embed.proj.0.0", classifier="head", license="other", **kwargs
    )


# Released fan_tiny_12_p16_224 / fan_small_12_p16_224 (eta 1.0, tokens_norm True, qkv_bias).
_TINY: dict[str, Any] = dict(patch_size=16, embed_dim=192, depth=12, num_heads=4, tokens_norm=True)
_SMALL: dict[str, Any] = dict(patch_size=16, embed_dim=384, depth=12, num_heads=8, tokens_norm=True)
_NANO: dict[str, Any] = dict(FASHION_MNIST_ARGS, tokens_norm=True)


# Released FAN-T-ViT and FAN-S-ViT, their Elliptical twins (token-mixing layers 2..N) and the
# Fashion-MNIST pair (the module docstring).
_VARIANTS: dict[str, tuple[bool, dict[str, Any]]] = {
    "fan_tiny_12_p16_224": (False, _TINY),
    "fan_small_12_p16_224": (False, _SMALL),
    "fan_tiny_elliptical_12_p16_224": (True, _TINY),
    "fan_small_elliptical_12_p16_224": (True, _SMALL),
    "fan_nano_4_p4_28": (False, _NANO),
    "fan_nano_elliptical_4_p4_28": (True, _NANO),
}
default_cfgs = generate_default_cfgs(
    {
        name: _fan_cfg(**(FASHION_MNIST_CFG if args is _NANO else {}))
        for name, (_, args) in _VARIANTS.items()
    }
)
globals().update(register_timm_variants(__name__, _create_fan, _VARIANTS))
