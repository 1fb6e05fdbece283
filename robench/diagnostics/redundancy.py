"""Head redundancy: how different the attention maps of a layer's heads are.

Reproduces Table 18 of Elliptical Attention (NeurIPS 2024): the L2 distance between the
vectorised (N x N, flattened) attention maps of every pair of heads of a layer, per sample,

    d_l[b, (h, g)] = || A_l[b, h] - A_l[b, g] ||_2    for heads h < g,

averaged over samples and pairs per layer, then over layers. Larger distances mean heads attend
differently (less redundancy). The report's "mean ± std" is the mean and the (population)
standard deviation of all distances d_l[b, (h, g)]: per layer for `per_layer_*`, pooled over all
layers for `mean` and `std` (every layer contributes the same number of distances, so `mean` is
also the average of `per_layer_mean`).
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import Tensor, nn

from robench.diagnostics.base import (
    DIAGNOSTICS,
    BatchedParams,
    Diagnostic,
    DiagnosticOutput,
    check_images,
)
from robench.diagnostics.capture import collect_layers, find_transformer
from robench.errors import ConfigError

__all__ = ["HeadRedundancy", "HeadRedundancyParams", "pairwise_head_distances"]

logger = logging.getLogger(__name__)


def pairwise_head_distances(attn: Tensor) -> Tensor:
    """L2 distances between the flattened attention maps of every pair of heads.

    Args:
        attn: attention probabilities (B, H, N, N) (any (B, H, ...) works), H >= 2.

    Returns:
        (B, H (H - 1) / 2) float64, pairs (h, g) with h < g in `torch.triu_indices` order.
        Pairs are done one at a time, so memory stays at one (B, N * N) difference.
    """
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


class HeadRedundancyParams(BatchedParams):
    """Only the batch size: attention maps are large ((B, H, N, N) per layer)."""


@DIAGNOSTICS.register("head_redundancy")
class HeadRedundancy(Diagnostic):
    """Mean L2 distance between the attention maps of pairs of heads, per layer (Table 18).

    values: `per_layer_mean`, `per_layer_std` (one number per block), `mean`, `std` (pooled
    over layers). With `out_dir`, also writes `head_redundancy.png`.
    """

    Params = HeadRedundancyParams
    params: HeadRedundancyParams

    def run(
        self, model: nn.Module, images: Tensor, *, out_dir: Path | None = None
    ) -> DiagnosticOutput:
        images = check_images(images)
        parts = find_transformer(model, "the head_redundancy diagnostic")
        heads = getattr(parts.attentions[0], "num_heads", None)
        if isinstance(heads, int) and heads < 2:
            raise ConfigError(
                f"head_redundancy compares pairs of heads, but the model's attention has "
                f"{heads} head; use a model with at least 2 heads."
            )

        def reduce(attn: Tensor) -> Tensor:
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
            from robench.plots import plot_redundancy

            files.append(
                plot_redundancy(
                    {"model": per_layer_mean},
                    out_dir / "head_redundancy.png",
                    per_layer_std={"model": per_layer_std},
                )
            )
        return DiagnosticOutput(values=values, files=files)
