"""FAN's mixing layers: token-mixing self-attention and the channel-attention MLP.

Paper: Zhou, Yu, Xie, Xiao, Anandkumar, Feng, Alvarez, "Understanding The Robustness in Vision
Transformers" (Fully Attentional Networks), ICML 2022, https://arxiv.org/abs/2204.12451.
Released definition: NVlabs/FAN, models/fan.py (`TokenMixing`, `ChannelProcessing`); the module
and parameter names below are theirs, so a released state dict loads key for key.

Token mixing is plain multi-head self-attention with separate `q` and `kv` projections:

    H = softmax(Q K^T / sqrt(D)) V,   Q = x W_q,  [K, V] = x W_kv                (B, H, N, D)

`EllipticalTokenMixing` puts Elliptical Attention's metric M into it (same parameters):
softmax((Q * m) K^T / sqrt(D)) V, with m estimated from the values V of this and the previous
token-mixing layer (robench/models/layers/elliptical_attention.py).

Channel processing ("attentional channel MLP") re-weights the channels of an MLP's output by a
per-head channel attention computed from the block input x (B, N, C), split into h heads of d:

    a     = sigmoid(softmax_N(x W_q)^T mean_d(softmax_N(x)))  * temperature      (B, h, d, 1)
    out   = a * LayerNorm(MLP(x))                                               (B, N, h, d)

where MLP(x) = fc2(fc1(x) + gamma * DWConv(fc1(x))) and DWConv is a depthwise 3x3 convolution,
GELU, BatchNorm, depthwise 3x3 on the token grid. As released, the MLP's own `act` is defined
but never applied (the only non-linearity is the GELU inside DWConv); we keep that behaviour.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from timm.layers import use_fused_attn
from torch import Tensor, nn

from robench.models.layers.elliptical_attention import EllipticalMetricMixin

__all__ = ["ChannelProcessing", "EllipticalTokenMixing", "TokenMixing"]


class TokenMixing(nn.Module):
    """FAN's token-mixing self-attention (released `TokenMixing`, `sr_ratio` 1, no `qk_scale`).

    Set `fused_attn = False` for the explicit-softmax path (what robench's attention capture
    reads through the input of `attn_drop`).
    """

    def __init__(
        self,
        dim: int,
        num_heads: int = 8,
        qkv_bias: bool = False,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
    ) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim {dim} must be divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim**-0.5
        self.fused_attn = use_fused_attn()
        self.q = nn.Linear(dim, dim, bias=qkv_bias)
        self.kv = nn.Linear(dim, dim * 2, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def _metric(self, k: Tensor, v: Tensor) -> Tensor | None:
        """The diagonal of a metric on Q (None: standard attention); see the elliptical twin."""
        return None

    def forward(self, x: Tensor) -> Tensor:
        B, N, C = x.shape
        q = self.q(x).reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, N, D)
        kv = self.kv(x).reshape(B, N, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]  # (B, H, N, D) each
        m = self._metric(k, v)  # (B, H, 1, D) or None
        if m is not None:
            # In place unless M carries gradient (as in EllipticalAttention): no copy of Q.
            q = q * m if m.requires_grad else q.mul_(m)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.attn_drop.p if self.training else 0.0
            )  # (B, H, N, D)
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1)  # (B, H, N, N)
            x = self.attn_drop(attn.softmax(dim=-1)) @ v  # (B, H, N, D)
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class EllipticalTokenMixing(EllipticalMetricMixin, TokenMixing):
    """`TokenMixing` with Elliptical Attention's M on Q; the same parameters and keys.

    Needs `configure_elliptical(model)` once after building; the first such layer of a model
    stays standard and only hands its values on (it has no previous layer's values).
    """

    # `_metric` comes from the mixin, first in the method resolution order.

    def extra_repr(self) -> str:
        return f"{self._elliptical_repr()}, fused_attn={self.fused_attn}"


class _DWConv(nn.Module):
    """Depthwise 3x3, GELU, BatchNorm, depthwise 3x3 over the token grid (released `DWConv`)."""

    def __init__(self, dim: int, act_layer: type[nn.Module] = nn.GELU) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(dim, dim, kernel_size=3, padding=1, groups=dim)
        self.act = act_layer()
        self.bn = nn.BatchNorm2d(dim)
        self.conv2 = nn.Conv2d(dim, dim, kernel_size=3, padding=1, groups=dim)

    def forward(self, x: Tensor, H: int, W: int) -> Tensor:
        B, N, C = x.shape
        x = x.transpose(1, 2).reshape(B, C, H, W)
        x = self.conv2(self.bn(self.act(self.conv1(x))))
        return x.reshape(B, C, N).transpose(1, 2)  # (B, N, C)


class _ChannelMlp(nn.Module):
    """The MLP of `ChannelProcessing` (released `Mlp`): fc1, gated depthwise conv, fc2."""

    def __init__(
        self, dim: int, hidden: int, act_layer: type[nn.Module] = nn.GELU, drop: float = 0.0
    ) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.dwconv = _DWConv(hidden, act_layer)
        self.gamma = nn.Parameter(torch.ones(hidden))
        self.act = act_layer()  # defined, never applied: as released (see the module docstring)
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(drop)

    def forward(self, x: Tensor, H: int, W: int) -> Tensor:
        x = self.fc1(x)  # (B, N, hidden)
        x = self.drop(self.gamma * self.dwconv(x, H, W)) + x
        return self.drop(self.fc2(x))  # (B, N, C)


class ChannelProcessing(nn.Module):
    """FAN's attentional channel MLP (released `ChannelProcessing`, `cha_sr_ratio` 1)."""

    def __init__(
        self,
        dim: int,
        num_heads: int = 8,
        qkv_bias: bool = False,
        attn_drop: float = 0.0,
        mlp_hidden_dim: int | None = None,
        act_layer: type[nn.Module] = nn.GELU,
        drop: float = 0.0,
    ) -> None:
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim {dim} must be divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.temperature = nn.Parameter(torch.ones(num_heads, 1, 1))
        self.mlp_v = _ChannelMlp(dim, mlp_hidden_dim or dim, act_layer, drop)
        # torch's default eps (1e-5), not the blocks' 1e-6: FANBlock never passes its norm_layer.
        self.norm_v = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)

    def _channel_attention(self, q: Tensor, k: Tensor) -> Tensor:
        """(B, h, N, d) queries and keys -> (B, h, d, 1) channel weights."""
        q = q.softmax(dim=-2).transpose(-1, -2)  # (B, h, d, N)
        # released: adaptive_avg_pool2d(k.softmax(-2), (N, 1)), i.e. the mean over d
        k = k.softmax(dim=-2).mean(dim=-1, keepdim=True)  # (B, h, N, 1)
        return torch.sigmoid(q @ k) * self.temperature  # (B, h, d, 1)

    def forward(self, x: Tensor, H: int, W: int) -> Tensor:
        B, N, C = x.shape
        heads = x.reshape(B, N, self.num_heads, C // self.num_heads).transpose(1, 2)
        q = self.q(x).reshape(B, N, self.num_heads, C // self.num_heads).transpose(1, 2)
        attn = self.attn_drop(self._channel_attention(q, heads))  # (B, h, d, 1)
        v = self.norm_v(self.mlp_v(x, H, W))  # (B, N, C)
        v = v.reshape(B, N, self.num_heads, C // self.num_heads).permute(0, 2, 3, 1)  # (B,h,d,N)
        return (attn * v).permute(0, 3, 1, 2).reshape(B, N, C)
