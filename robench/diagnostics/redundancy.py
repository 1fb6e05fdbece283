"""Head redundancy: how different the attention maps of a layer's heads are.

Reproduces Table 18 of Elliptical Attention (NeurIPS 2024): the L2 distance between the
flattened attention maps of every pair of heads of a layer, per sample. The formula, the
figure's sqrt(2N) bound and causal language models: docs/diagnostics.md, `head_redundancy`.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import torch
from torch import Tensor, nn

from robench._core.errors import ConfigError
from robench.diagnostics.base import (
    Diagnostic,
    DiagnosticOutput,
    check_inputs,
    sample_noun,
)
from robench.diagnostics.capture import collect_layers, find_transformer
from robench.diagnostics.params import HeadRedundancyParams

__all__ = ["HeadRedundancy", "HeadRedundancyParams", "pairwise_head_distances"]

logger = logging.getLogger(__name__)


def pairwise_head_distances(attn: Tensor) -> Tensor:
    """L2 distances between the flattened attention maps `attn` (B, H >= 2, N, N) (any (B, H,
    ...) works) of every pair of heads: (B, H (H - 1) / 2) float64, pairs (h, g) with h < g in
    `torch.triu_indices` order. Pairs are done one at a time, so memory stays at one (B, N * N)
    difference."""
    if attn.dim() < 3 or attn.shape[1] < 2:
        raise ValueError(f"need attention maps of shape (B, H >= 2, ...), got {tuple(attn.shape)}")
    flat = attn.flatten(2)  # (B, H, N * N)
    rows, cols = torch.triu_indices(attn.shape[1], attn.shape[1], offset=1).tolist()
    return torch.stack(
        [
            torch.linalg.vector_norm(flat[:, h] - flat[:, g], dim=-1, dtype=torch.float64)
            for h, g in zip(rows, cols, strict=True)
        ],
        dim=1,
    )  # (B, P)


class HeadRedundancy(Diagnostic):
    """Mean L2 distance between the attention maps of pairs of heads, per layer (Table 18),
    for ViTs on images and for causal language models on token windows.

    values: `per_layer_mean`, `per_layer_std` (one number per block), `mean`, `std` (pooled
    over layers). With `out_dir`, also writes `head_redundancy.png`: mean +- 1 std per layer,
    titled with `title` (default: the architecture's name), y from 0 to sqrt(2N).
    """

    Params = HeadRedundancyParams
    params: HeadRedundancyParams

    def measure(
        self, model: nn.Module, images: Tensor, out_dir: Path | None, title: str | None
    ) -> DiagnosticOutput:
        """See `Diagnostic.run`; `title` names the model in the figure."""
        images = check_inputs(images)
        parts = find_transformer(model, "the head_redundancy diagnostic")
        heads = getattr(parts.attentions[0], "num_heads", None)
        if isinstance(heads, int) and heads < 2:
            raise ConfigError(
                f"head_redundancy compares pairs of heads, but the model's attention has "
                f"{heads} head; use a model with at least 2 heads."
            )

        tokens: list[int] = []

        def reduce(attn: Tensor) -> Tensor:
            tokens.append(attn.shape[-2])  # rows (queries), each a distribution
            return pairwise_head_distances(attn).cpu()  # (B, P)

        records = collect_layers(
            model, images, what="attention", reduce=reduce, batch_size=self.params.batch_size
        )
        distances = [torch.cat(layer) for layer in records]  # depth x (S, P)
        per_layer_mean = [float(d.mean()) for d in distances]
        per_layer_std = [float(d.std(unbiased=False)) for d in distances]
        pooled = torch.cat([d.flatten() for d in distances])
        mean, std = float(pooled.mean()), float(pooled.std(unbiased=False))
        values = {
            "per_layer_mean": per_layer_mean,
            "per_layer_std": per_layer_std,
            "mean": mean,
            "std": std,
        }
        logger.info("head redundancy: mean L2 distance %.4f ± %.4f", mean, std)
        files = []
        if out_dir is not None:
            from robench.results.plots.figures import architecture_label, plot_redundancy

            name = title if title is not None else architecture_label(parts.network)
            n_tokens, n_pairs = max(tokens), distances[0].shape[1]
            ceiling = math.sqrt(2 * n_tokens)
            files.append(
                plot_redundancy(
                    {name: per_layer_mean},
                    out_dir / "head_redundancy.png",
                    per_layer_std={name: per_layer_std},
                    std_label=f"± 1 std over {images.shape[0]} {sample_noun(images)} × "
                    f"{n_pairs} head pairs",
                    ymax=ceiling,
                    title=f"Head redundancy: {name}",
                    note="higher = heads attend more differently (less redundancy)\n"
                    f"y-axis: 0 to the largest possible distance, √(2N) = {ceiling:.1f} for "
                    f"N = {n_tokens} tokens",
                )
            )
        return DiagnosticOutput(values=values, files=files)
