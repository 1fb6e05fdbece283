"""A sparse mixture-of-experts feed-forward layer with top-k routing and a load-balancing loss.

Switch Transformer (Fedus, Zoph, Shazeer 2022, https://arxiv.org/abs/2101.03961) routes each
token to its top-1 expert; GLaM (Du et al. 2022, https://arxiv.org/abs/2112.06905) to its
top-2. For a token x (C,), router weights W_r (C, E) and experts FFN_e (two-layer MLPs):

    p      = softmax(x @ W_r)                               (E,) router probabilities
    S      = the k experts of largest p                     (ties: the lower index)
    g_e    = p_e                 for k = 1 (Switch: the gate keeps the router's confidence)
    g_e    = p_e / sum_{j in S} p_j  for k > 1 (GLaM, GShard: renormalised over the chosen)
    y      = sum_{e in S} g_e * FFN_e(x)

The auxiliary load-balancing loss (Switch Eq. 4, with GLaM's top-k count) is

    aux = E * sum_e f_e * P_e,   f_e = share of the N * k assignments that go to e,
                                 P_e = mean over the N tokens of p_e

which is 1 for a perfectly uniform router. `forward` stores it in `self.aux_loss` (a scalar
with gradient to the router) and the assignments per expert in `self.expert_counts`.

Deliberately left out, so that a token's output depends on that token only (a text's logits
never depend on the other texts of its batch): expert capacity (Switch drops tokens beyond
`capacity_factor * N / E`, which couples tokens of one batch) and router noise (jitter in
training, none here, so training and evaluation route alike and routing is deterministic).

The constructor takes timm's `Mlp` arguments, so `functools.partial(MixtureOfExperts,
num_experts=E, top_k=k)` is a `mlp_layer` of timm's `Block`.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from robench._core.errors import ConfigError

__all__ = ["MixtureOfExperts", "load_balancing_loss"]


def load_balancing_loss(probs: Tensor, chosen: Tensor) -> Tensor:
    """E * sum_e f_e * P_e from router probabilities (N, E) and the chosen experts (N, k)."""
    num_experts = probs.shape[-1]
    counts = torch.zeros(num_experts, device=probs.device, dtype=probs.dtype)
    counts.scatter_add_(0, chosen.flatten(), torch.ones_like(chosen.flatten(), dtype=probs.dtype))
    share = counts / max(1, chosen.numel())  # f_e, (E,); no gradient (a count)
    return num_experts * (share * probs.mean(dim=0)).sum()


class MixtureOfExperts(nn.Module):
    """E two-layer MLP experts behind a top-k router (see the module docstring).

    Takes timm `Mlp`'s arguments (widths default to the token width C; `norm_layer` unused,
    robench's blocks pass None; `drop` after the activation and on the output), plus
    `num_experts` E >= 1 and `top_k` experts per token, 1 <= k <= E.
    """

    def __init__(
        self,
        in_features: int,
        hidden_features: int | None = None,
        out_features: int | None = None,
        act_layer: type[nn.Module] = nn.GELU,
        norm_layer: Any = None,
        bias: bool = True,
        drop: float = 0.0,
        *,
        num_experts: int = 4,
        top_k: int = 1,
        **_: Any,  # timm passes device/dtype: the parameters are created on the default ones
    ) -> None:
        super().__init__()
        if not isinstance(num_experts, int) or isinstance(num_experts, bool) or num_experts < 1:
            raise ConfigError(f"num_experts must be an integer >= 1, got {num_experts!r}.")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= num_experts:
            raise ConfigError(
                f"top_k must be an integer between 1 and num_experts ({num_experts}), got "
                f"{top_k!r}; Switch routes with 1, GLaM with 2."
            )
        hidden = hidden_features or in_features
        out = out_features or in_features
        self.num_experts, self.top_k = num_experts, top_k
        self.router = nn.Linear(in_features, num_experts, bias=False)
        # Experts stacked into (E, ...) tensors: one parameter per layer, whatever E.
        self.fc1_weight = nn.Parameter(torch.empty(num_experts, in_features, hidden))
        self.fc1_bias = nn.Parameter(torch.zeros(num_experts, hidden)) if bias else None
        self.fc2_weight = nn.Parameter(torch.empty(num_experts, hidden, out))
        self.fc2_bias = nn.Parameter(torch.zeros(num_experts, out)) if bias else None
        self.act = act_layer()
        self.drop = nn.Dropout(drop)
        nn.init.trunc_normal_(self.fc1_weight, std=0.02)
        nn.init.trunc_normal_(self.fc2_weight, std=0.02)
        nn.init.trunc_normal_(self.router.weight, std=0.02)
        self.aux_loss: Tensor = torch.zeros(())
        self.expert_counts: Tensor = torch.zeros(num_experts, dtype=torch.long)

    def extra_repr(self) -> str:
        return f"num_experts={self.num_experts}, top_k={self.top_k}"

    def route(self, tokens: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Router probabilities (N, E), the chosen experts (N, k) and their gates (N, k)."""
        # The router runs in float32 (Switch's "selective precision"): softmax over experts
        # is where low precision flips routing decisions.
        probs = F.linear(tokens.float(), self.router.weight.float()).softmax(dim=-1)  # (N, E)
        gates, chosen = probs.topk(self.top_k, dim=-1)  # (N, k) each, deterministic
        if self.top_k > 1:
            gates = gates / gates.sum(dim=-1, keepdim=True)
        return probs, chosen, gates.to(tokens.dtype)

    def _expert(self, index: int, x: Tensor) -> Tensor:
        h = x @ self.fc1_weight[index]  # (n, H)
        if self.fc1_bias is not None:
            h = h + self.fc1_bias[index]
        h = self.drop(self.act(h)) @ self.fc2_weight[index]  # (n, C_out)
        return h + self.fc2_bias[index] if self.fc2_bias is not None else h

    def forward(self, x: Tensor) -> Tensor:
        shape = x.shape
        tokens = x.reshape(-1, shape[-1])  # (N, C)
        probs, chosen, gates = self.route(tokens)
        out = tokens.new_zeros(tokens.shape[0], self.fc2_weight.shape[-1])  # (N, C_out)
        # One gathered matmul per expert over the tokens routed to it (no capacity limit).
        # The (token, slot) pairs sorted by expert, in row-major order within one (as
        # `nonzero` lists them), split by the experts' counts: one read of the counts by
        # the host per layer, not a `nonzero` (a GPU synchronisation) per expert.
        flat = chosen.flatten()  # (N k,)
        self.expert_counts = torch.bincount(flat, minlength=self.num_experts)
        pairs = torch.argsort(flat, stable=True)
        start = 0
        for expert, count in enumerate(self.expert_counts.tolist()):
            if count:
                pair = pairs[start : start + count]
                rows, slot = pair // self.top_k, pair % self.top_k  # (n,), (n,)
                y = self._expert(expert, tokens[rows]) * gates[rows, slot, None]
                out.index_add_(0, rows, y)
            start += count
        self.aux_loss = load_balancing_loss(probs, chosen)
        return self.drop(out).reshape(*shape[:-1], -1)
