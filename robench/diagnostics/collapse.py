"""Representation collapse: how similar a ViT's tokens become layer after layer.

Reproduces Fig. 3 and Fig. 6 of Elliptical Attention (NeurIPS 2024): for the tokens after each
transformer block, the mean cosine similarity over all pairs of distinct tokens. The formula,
which tokens count and why language-model windows must be of equal length:
docs/diagnostics.md, `collapse`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from robench._core.errors import DataError
from robench.diagnostics.base import (
    Diagnostic,
    DiagnosticOutput,
    check_inputs,
    is_token_batch,
    sample_noun,
)
from robench.diagnostics.capture import collect_layers, find_transformer
from robench.diagnostics.params import CollapseParams

__all__ = ["Collapse", "CollapseParams", "mean_pairwise_cosine"]

logger = logging.getLogger(__name__)


def mean_pairwise_cosine(tokens: Tensor) -> Tensor:
    """Mean cosine similarity over the N (N - 1) ordered pairs of distinct tokens of
    `tokens` (..., N >= 2, C): (...,) float64, exactly 1 for identical (nonzero) tokens, 0 for
    orthogonal ones. Computed as (||sum_i u_i||^2 - sum_i ||u_i||^2) / (N (N - 1)) with u_i the
    unit tokens: O(N C) instead of an N x N matrix. A zero token has cosine 0 with every token.
    """
    if tokens.dim() < 2 or tokens.shape[-2] < 2:
        raise ValueError(f"need tokens of shape (..., N >= 2, C), got {tuple(tokens.shape)}")
    n = tokens.shape[-2]
    unit = F.normalize(tokens.double(), dim=-1)  # (..., N, C)
    all_pairs = unit.sum(dim=-2).square().sum(dim=-1)  # sum_{i, j} u_i . u_j
    self_pairs = unit.square().sum(dim=(-2, -1))  # sum_i u_i . u_i
    return (all_pairs - self_pairs) / (n * (n - 1))


class Collapse(Diagnostic):
    """Per-layer mean pairwise cosine similarity of tokens (paper Fig. 3 and 6), for ViTs on
    images and for causal language models on token windows (see the module docstring).

    values: `per_layer` (one number per block, first to last), `per_layer_std` (its standard
    deviation over samples: images or windows), `mean` (average of `per_layer`). With
    `out_dir`, also writes `collapse.png`: the curve with a +- 1 std band, titled with `title`
    (default: the architecture's name), y fixed to [0, 1] so that figures of different models
    compare.
    """

    Params = CollapseParams
    params: CollapseParams

    def measure(
        self, model: nn.Module, images: Tensor, out_dir: Path | None, title: str | None
    ) -> DiagnosticOutput:
        """See `Diagnostic.run`; `title` names the model in the figure."""
        images = check_inputs(images)
        if is_token_batch(images) and images.shape[1] < 2:
            raise DataError(
                f"the collapse diagnostic compares pairs of positions, but the windows have "
                f"{images.shape[1]} token; use windows of at least 2 tokens (target_length)."
            )
        parts = find_transformer(model, "the collapse diagnostic")
        start = 0 if self.params.include_cls else parts.num_prefix_tokens

        def reduce(tokens: Tensor) -> Tensor:
            return mean_pairwise_cosine(tokens[:, start:]).cpu()  # (B,)

        records = collect_layers(
            model, images, what="tokens", reduce=reduce, batch_size=self.params.batch_size
        )
        per_sample = [torch.cat(layer) for layer in records]  # depth x (S,)
        per_layer = [float(s.mean()) for s in per_sample]
        per_layer_std = [float(s.std(unbiased=False)) for s in per_sample]
        values = {
            "per_layer": per_layer,
            "per_layer_std": per_layer_std,
            "mean": sum(per_layer) / len(per_layer),
        }
        logger.info("collapse per layer: %s", ", ".join(f"{v:.3f}" for v in per_layer))
        files = []
        if out_dir is not None:
            from robench.results.plots.figures import architecture_label, plot_collapse_curves

            name = title if title is not None else architecture_label(parts.network)
            noun = sample_noun(images)
            if is_token_batch(images):
                tokens = f"{images.shape[1]} positions each, all compared"
            else:
                tokens = "all tokens" if self.params.include_cls else "patch tokens only"
            files.append(
                plot_collapse_curves(
                    {name: per_layer},
                    out_dir / "collapse.png",
                    spread={name: per_layer_std},
                    spread_label=f"± 1 std over {noun}",
                    title=f"Representation collapse: {name}",
                    note=f"mean over {images.shape[0]} {noun} ({tokens}); "
                    f"shaded: ± 1 std over {noun}",
                )
            )
        return DiagnosticOutput(values=values, files=files)
