"""NVlabs' released FAN-ViT, written down for tests: its state-dict layout as data and a
plain-torch transcription of its forward pass, the oracle robench's FAN must match.

Read from NVlabs/FAN, models/fan.py (commit 00eec3d, "clean code"): `ConvPatchEmbed`,
`PositionalEncodingFourier`, `TokenMixing`, `ChannelProcessing` with its `Mlp` and `DWConv`,
`FANBlock`, `ClassAttentionBlock` (timm's CaiT `ClassAttn`), `FAN.forward_features` and the
`fan_tiny_12_p16_224` / `fan_small_12_p16_224` builders. The transcription keeps the released
module names (so its state dict has the released keys) and its arithmetic step by step,
including its quirks: the channel MLP never applies its `act`; `norm_v` is a default-eps
LayerNorm; class-attention blocks add normalised patch tokens to themselves. It imports
nothing from robench or timm.

The elliptical oracle is the paper's formula taken literally (Eq. 10, max-scaling, Eq. 13) on
the released token mixing: m = mean_n |V_l - V_{l-1}| / max_i, logits = (Q * m) K^T / sqrt(D).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

# ---------------------------------------------------------------------------------------------
# fan_tiny_12_p16_224's state dict as the released definition produces it: names and shapes
# (embed 192, depth 12, 4 heads, mlp_ratio 4, qkv_bias, 2 class-attention blocks, 1000 classes).


def _bn(prefix: str, n: int) -> dict[str, tuple[int, ...]]:
    return {
        f"{prefix}.weight": (n,),
        f"{prefix}.bias": (n,),
        f"{prefix}.running_mean": (n,),
        f"{prefix}.running_var": (n,),
        f"{prefix}.num_batches_tracked": (),
    }


def _block(i: int, C: int, heads: int, hidden: int) -> dict[str, tuple[int, ...]]:
    p = f"blocks.{i}"
    keys = {
        f"{p}.gamma1": (C,),
        f"{p}.gamma2": (C,),
        f"{p}.norm1.weight": (C,),
        f"{p}.norm1.bias": (C,),
        f"{p}.attn.q.weight": (C, C),
        f"{p}.attn.q.bias": (C,),
        f"{p}.attn.kv.weight": (2 * C, C),
        f"{p}.attn.kv.bias": (2 * C,),
        f"{p}.attn.proj.weight": (C, C),
        f"{p}.attn.proj.bias": (C,),
        f"{p}.norm2.weight": (C,),
        f"{p}.norm2.bias": (C,),
        f"{p}.mlp.temperature": (heads, 1, 1),
        f"{p}.mlp.mlp_v.gamma": (hidden,),
        f"{p}.mlp.mlp_v.fc1.weight": (hidden, C),
        f"{p}.mlp.mlp_v.fc1.bias": (hidden,),
        f"{p}.mlp.mlp_v.dwconv.conv1.weight": (hidden, 1, 3, 3),
        f"{p}.mlp.mlp_v.dwconv.conv1.bias": (hidden,),
        f"{p}.mlp.mlp_v.dwconv.conv2.weight": (hidden, 1, 3, 3),
        f"{p}.mlp.mlp_v.dwconv.conv2.bias": (hidden,),
        f"{p}.mlp.mlp_v.fc2.weight": (C, hidden),
        f"{p}.mlp.mlp_v.fc2.bias": (C,),
        f"{p}.mlp.norm_v.weight": (C,),
        f"{p}.mlp.norm_v.bias": (C,),
        f"{p}.mlp.q.weight": (C, C),
        f"{p}.mlp.q.bias": (C,),
    }
    keys.update(_bn(f"{p}.mlp.mlp_v.dwconv.bn", hidden))
    return keys


def _cls_block(i: int, C: int, hidden: int) -> dict[str, tuple[int, ...]]:
    p = f"cls_attn_blocks.{i}"
    keys: dict[str, tuple[int, ...]] = {f"{p}.gamma1": (C,), f"{p}.gamma2": (C,)}
    for norm in ("norm1", "norm2"):
        keys[f"{p}.{norm}.weight"] = keys[f"{p}.{norm}.bias"] = (C,)
    for proj in ("q", "k", "v", "proj"):
        keys[f"{p}.attn.{proj}.weight"], keys[f"{p}.attn.{proj}.bias"] = (C, C), (C,)
    keys.update({f"{p}.mlp.fc1.weight": (hidden, C), f"{p}.mlp.fc1.bias": (hidden,)})
    keys.update({f"{p}.mlp.fc2.weight": (C, hidden), f"{p}.mlp.fc2.bias": (C,)})
    return keys


def released_fan_vit_keys(
    C: int = 192, depth: int = 12, heads: int = 4, classes: int = 1000
) -> dict[str, tuple[int, ...]]:
    """Key -> shape of a released FAN-ViT (patch 16, RGB) state dict; defaults: FAN-T-ViT."""
    keys: dict[str, tuple[int, ...]] = {"cls_token": (1, 1, C)}
    stem = [(3, C // 8), (C // 8, C // 4), (C // 4, C // 2), (C // 2, C)]  # Sequential 0, 2, 4, 6
    for index, (cin, cout) in zip((0, 2, 4, 6), stem, strict=True):
        keys[f"patch_embed.proj.{index}.0.weight"] = (cout, cin, 3, 3)  # conv, no bias
        keys.update(_bn(f"patch_embed.proj.{index}.1", cout))
    keys["pos_embed.token_projection.weight"] = (C, 64, 1, 1)  # hidden_dim 32 -> 2 * 32 in
    keys["pos_embed.token_projection.bias"] = (C,)
    for i in range(depth):
        keys.update(_block(i, C, heads, 4 * C))
    for i in range(2):
        keys.update(_cls_block(i, C, 4 * C))
    keys.update({"norm.weight": (C,), "norm.bias": (C,)})
    keys.update({"head.weight": (classes, C), "head.bias": (classes,)})
    return keys


# ---------------------------------------------------------------------------------------------
# The transcription.


def _conv3x3(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1, bias=False), nn.BatchNorm2d(cout))


class ConvPatchEmbed(nn.Module):
    def __init__(self, patch_size: int, in_chans: int, C: int) -> None:
        super().__init__()
        if patch_size == 16:
            self.proj = nn.Sequential(
                _conv3x3(in_chans, C // 8),
                nn.GELU(),
                _conv3x3(C // 8, C // 4),
                nn.GELU(),
                _conv3x3(C // 4, C // 2),
                nn.GELU(),
                _conv3x3(C // 2, C),
            )
        else:  # released patch_size == 4
            self.proj = nn.Sequential(_conv3x3(in_chans, C // 4), nn.GELU(), _conv3x3(C // 4, C))

    def forward(self, x: Tensor) -> tuple[Tensor, tuple[int, int]]:
        x = self.proj(x)
        Hp, Wp = x.shape[2], x.shape[3]
        return x.flatten(2).transpose(1, 2), (Hp, Wp)


class PositionalEncodingFourier(nn.Module):
    def __init__(self, dim: int, hidden_dim: int = 32, temperature: float = 10000) -> None:
        super().__init__()
        self.token_projection = nn.Conv2d(hidden_dim * 2, dim, kernel_size=1)
        self.scale, self.temperature, self.hidden_dim, self.eps = 2 * math.pi, temperature, 32, 1e-6

    def forward(self, B: int, H: int, W: int) -> Tensor:
        y_embed = torch.arange(1, H + 1, dtype=torch.float32).unsqueeze(1).repeat(1, 1, W)
        x_embed = torch.arange(1, W + 1, dtype=torch.float32).repeat(1, H, 1)
        y_embed = y_embed / (y_embed[:, -1:, :] + self.eps) * self.scale
        x_embed = x_embed / (x_embed[:, :, -1:] + self.eps) * self.scale
        dim_t = torch.arange(self.hidden_dim, dtype=torch.float32)
        dim_t = self.temperature ** (
            2 * torch.div(dim_t, 2, rounding_mode="floor") / self.hidden_dim
        )
        pos_x = x_embed[:, :, :, None] / dim_t
        pos_y = y_embed[:, :, :, None] / dim_t
        pos_x = torch.stack([pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()], dim=4)
        pos_y = torch.stack([pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()], dim=4)
        pos = torch.cat((pos_y.flatten(3), pos_x.flatten(3)), dim=3).permute(0, 3, 1, 2)
        return self.token_projection(pos).repeat(B, 1, 1, 1)


class ValueCarry:
    """The elliptical oracle's V_{l-1}, set by each token-mixing layer in order."""

    values: Tensor | None = None


class TokenMixing(nn.Module):
    def __init__(self, dim: int, num_heads: int, carry: ValueCarry | None, first: bool) -> None:
        super().__init__()
        self.num_heads, self.scale = num_heads, (dim // num_heads) ** -0.5
        self.q = nn.Linear(dim, dim, bias=True)
        self.kv = nn.Linear(dim, dim * 2, bias=True)
        self.proj = nn.Linear(dim, dim)
        self.carry, self.first = carry, first  # carry None: the released (standard) layer

    def forward(self, x: Tensor) -> Tensor:
        B, N, C = x.shape
        q = self.q(x).reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 1, 3)
        kv = (
            self.kv(x).reshape(B, -1, 2, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        )
        k, v = kv[0], kv[1]
        if self.carry is not None:
            if not self.first:  # Eq. 10 (delta = 1), max-scaling, Eq. 13: Q M K^T
                m = (v - self.carry.values).abs().mean(dim=2, keepdim=True)  # (B, H, 1, D)
                q = q * (m / m.amax(dim=-1, keepdim=True))
            self.carry.values = v
        attn = (q * self.scale @ k.transpose(-2, -1)).softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class DWConv(nn.Module):
    def __init__(self, C: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(C, C, kernel_size=3, padding=1, groups=C)
        self.act = nn.GELU()
        self.bn = nn.BatchNorm2d(C)
        self.conv2 = nn.Conv2d(C, C, kernel_size=3, padding=1, groups=C)

    def forward(self, x: Tensor, H: int, W: int) -> Tensor:
        B, N, C = x.shape
        x = x.permute(0, 2, 1).reshape(B, C, H, W)
        x = self.conv2(self.bn(self.act(self.conv1(x))))
        return x.reshape(B, C, N).permute(0, 2, 1)


class Mlp(nn.Module):  # ChannelProcessing's: `act` is never applied
    def __init__(self, C: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(C, hidden)
        self.dwconv = DWConv(hidden)
        self.gamma = nn.Parameter(torch.ones(hidden))
        self.fc2 = nn.Linear(hidden, C)

    def forward(self, x: Tensor, H: int, W: int) -> Tensor:
        x = self.fc1(x)
        x = self.gamma * self.dwconv(x, H, W) + x
        return self.fc2(x)


class ChannelProcessing(nn.Module):
    def __init__(self, dim: int, num_heads: int, hidden: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.temperature = nn.Parameter(torch.ones(num_heads, 1, 1))
        self.mlp_v = Mlp(dim, hidden)
        self.norm_v = nn.LayerNorm(dim)  # torch's default eps: FANBlock passes no norm_layer
        self.q = nn.Linear(dim, dim, bias=True)

    def _gen_attn(self, q: Tensor, k: Tensor) -> Tensor:
        q = q.softmax(-2).transpose(-1, -2)
        _, _, N, _ = k.shape
        k = torch.nn.functional.adaptive_avg_pool2d(k.softmax(-2), (N, 1))
        return torch.sigmoid(q @ k) * self.temperature

    def forward(self, x: Tensor, H: int, W: int) -> Tensor:
        B, N, C = x.shape
        h = self.num_heads
        v = x.reshape(B, N, h, C // h).permute(0, 2, 1, 3)
        q = self.q(x).reshape(B, N, h, C // h).permute(0, 2, 1, 3)
        k = x.reshape(B, N, h, C // h).permute(0, 2, 1, 3)
        attn = self._gen_attn(q, k)
        Bv, Hd, Nv, Cv = v.shape
        v = self.mlp_v(v.transpose(1, 2).reshape(Bv, Nv, Hd * Cv), H, W)
        v = self.norm_v(v).reshape(Bv, Nv, Hd, Cv).transpose(1, 2)
        return (attn * v.transpose(-1, -2)).permute(0, 3, 1, 2).reshape(B, N, C)


class FANBlock(nn.Module):
    def __init__(self, dim: int, heads: int, hidden: int, carry: ValueCarry | None, first: bool):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = TokenMixing(dim, heads, carry, first)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = ChannelProcessing(dim, heads, hidden)
        self.gamma1 = nn.Parameter(torch.ones(dim))
        self.gamma2 = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor, H: int, W: int) -> Tensor:
        x = x + self.gamma1 * self.attn(self.norm1(x))
        return x + self.gamma2 * self.mlp(self.norm2(x), H, W)


class ClassAttn(nn.Module):  # timm CaiT, as the released file imports it
    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads, self.scale = num_heads, (dim // num_heads) ** -0.5
        self.q, self.k, self.v = (nn.Linear(dim, dim, bias=True) for _ in range(3))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        B, N, C = x.shape
        h = self.num_heads
        q = self.q(x[:, 0]).unsqueeze(1).reshape(B, 1, h, C // h).permute(0, 2, 1, 3)
        k = self.k(x).reshape(B, N, h, C // h).permute(0, 2, 1, 3)
        v = self.v(x).reshape(B, N, h, C // h).permute(0, 2, 1, 3)
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, 1, C))


class ClassAttentionBlock(nn.Module):  # tokens_norm=True in every released FAN-ViT
    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = ClassAttn(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential()
        self.mlp.fc1 = nn.Linear(dim, hidden)
        self.mlp.act = nn.GELU()
        self.mlp.fc2 = nn.Linear(hidden, dim)
        self.gamma1 = nn.Parameter(torch.ones(dim))
        self.gamma2 = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        x_norm1 = self.norm1(x)
        x1 = self.attn(x_norm1)
        x_attn = torch.cat([x1, x_norm1[:, 1:]], dim=1)
        x = x + self.gamma1 * x_attn
        x = self.norm2(x)  # tokens_norm
        x_res = x
        cls_token = self.gamma2 * self.mlp(x[:, 0:1])
        x = torch.cat([cls_token, x[:, 1:]], dim=1)
        return x_res + x


class ReleasedFAN(nn.Module):
    """FAN-ViT as released; `elliptical=True`: the paper's M in token mixing layers 2+."""

    def __init__(
        self,
        *,
        patch_size: int = 16,
        in_chans: int = 3,
        C: int = 192,
        depth: int = 12,
        heads: int = 4,
        mlp_ratio: float = 4.0,
        classes: int = 1000,
        elliptical: bool = False,
    ) -> None:
        super().__init__()
        carry = ValueCarry() if elliptical else None
        hidden = int(C * mlp_ratio)
        self.patch_embed = ConvPatchEmbed(patch_size, in_chans, C)
        self.pos_embed = PositionalEncodingFourier(C)
        self.blocks = nn.ModuleList(FANBlock(C, heads, hidden, carry, i == 0) for i in range(depth))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, C))
        self.cls_attn_blocks = nn.ModuleList(
            ClassAttentionBlock(C, heads, hidden) for _ in range(2)
        )
        self.norm = nn.LayerNorm(C, eps=1e-6)
        self.head = nn.Linear(C, classes)

    def forward(self, x: Tensor) -> Tensor:
        B = x.shape[0]
        x, (Hp, Wp) = self.patch_embed(x)
        pos_encoding = self.pos_embed(B, Hp, Wp).reshape(B, -1, x.shape[1]).permute(0, 2, 1)
        x = x + pos_encoding
        for blk in self.blocks:
            x = blk(x, Hp, Wp)
        x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
        for blk in self.cls_attn_blocks:
            x = blk(x)
        return self.head(self.norm(x)[:, 0])
