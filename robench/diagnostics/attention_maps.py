"""CLS attention maps: where the class token looks in the last layer.

Reproduces Fig. 1 of Elliptical Attention (NeurIPS 2024): the attention of the CLS token to
the patch tokens in the last layer, averaged over heads and laid out on the patch grid, drawn
beside the input image and min-max scaled for display (as in the paper). The paper's claim is
that DeiT focuses on a small subset of patches while Elliptical spreads its attention over more
relevant ones; `cls_attention_entropy` puts a number on that (1 = uniform over patches).

`plot_attention_comparison` draws the same images under several models, one row per image:
the image, then each model's heatmap (the baseline against the elliptical model, as in Fig. 1).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import torch
from pydantic import Field
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
from robench.plots import PNG_METADATA, new_figure, save_figure

__all__ = [
    "AttentionMaps",
    "AttentionMapsParams",
    "cls_attention_entropy",
    "cls_attention_maps",
    "plot_attention_comparison",
]

logger = logging.getLogger(__name__)

HEATMAP_CMAP = "inferno"


def cls_attention_maps(model: nn.Module, images: Tensor, *, batch_size: int = 32) -> Tensor:
    """The last layer's CLS-to-patch attention, mean over heads, on the patch grid.

    Args:
        model: pixel-space classifier containing a timm ViT with a class token.
        images: (B, C, H, W) in [0, 1].

    Returns:
        (B, rows, cols) float32 on the CPU; each map sums to at most 1 (the CLS token's
        attention to itself and to register tokens is left out).

    Raises:
        ConfigError: the model is not a ViT, or has no class token (global-pool ViTs).
    """
    images = check_images(images)
    parts = find_transformer(model, "CLS attention maps")
    if not parts.has_class_token:
        raise ConfigError(
            f"CLS attention maps need a class token, but {type(parts.network).__name__} has none "
            "(class_token=False); use a ViT/DeiT with a CLS token."
        )
    start = parts.num_prefix_tokens

    def reduce(attn: Tensor) -> Tensor:
        return attn[:, :, 0, start:].mean(dim=1).float().cpu()  # (B, H, N, N) -> (B, P)

    records = collect_layers(
        model, images, what="attention", reduce=reduce, batch_size=batch_size, layers=[-1]
    )
    rows = torch.cat(records[0])  # (B, P)
    grid = parts.patch_grid(rows.shape[1], (images.shape[-2], images.shape[-1]))
    return rows.reshape(-1, *grid)  # (B, rows, cols)


def cls_attention_entropy(maps: Tensor) -> Tensor:
    """Entropy of each map renormalised to a distribution over patches, divided by log(P).

    Args:
        maps: (B, rows, cols) nonnegative.

    Returns:
        (B,) float64 in [0, 1]: 1 for uniform attention, 0 for attention on a single patch.
    """
    p = maps.flatten(1).double()  # (B, P)
    p = p / p.sum(dim=1, keepdim=True).clamp_min(torch.finfo(p.dtype).tiny)
    n_patches = p.shape[1]
    if n_patches < 2:
        return torch.zeros(p.shape[0], dtype=p.dtype)
    return -torch.special.xlogy(p, p).sum(dim=1) / math.log(n_patches)


def _min_max(values: Tensor) -> np.ndarray:
    """Scale to [0, 1] for display; a constant map becomes all zeros."""
    values = values.double()
    span = values.max() - values.min()
    scaled = (values - values.min()) / span if span > 0 else torch.zeros_like(values)
    return scaled.numpy()


_DISPLAY: dict[int, Callable[[Tensor], Tensor]] = {
    1: lambda image: image[0],  # (H, W) grey
    3: lambda image: image.permute(1, 2, 0),  # (H, W, 3) colour
}


def _display(image: Tensor) -> Tensor:
    """(C, H, W) in [0, 1] -> what imshow draws; other channel counts are shown as their mean."""
    picture = _DISPLAY.get(image.shape[0], lambda im: im.mean(dim=0))(image)
    return picture.clamp(0, 1)


def _draw_comparison(images: Tensor, maps: Mapping[str, Tensor], path: Path) -> Path:
    """One row per image: the image, then each heatmap over the image (grey)."""
    pictures = images.detach().float().cpu()
    n_rows, n_cols = pictures.shape[0], 1 + len(maps)
    height, width = pictures.shape[-2:]
    extent = (-0.5, width - 0.5, height - 0.5, -0.5)  # heatmap cells cover their patches
    fig = new_figure(1.8 * n_cols, 1.8 * n_rows)
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    for row in range(n_rows):
        picture = _display(pictures[row])
        grey = picture if picture.dim() == 2 else picture.mean(dim=-1)  # (H, W)
        axes[row][0].imshow(picture.numpy(), cmap="gray", vmin=0, vmax=1)
        for col, heatmaps in enumerate(maps.values(), start=1):
            ax = axes[row][col]
            ax.imshow(grey.numpy(), cmap="gray", vmin=0, vmax=1)
            ax.imshow(
                _min_max(heatmaps[row]),
                cmap=HEATMAP_CMAP,
                vmin=0,
                vmax=1,
                alpha=0.6,
                extent=extent,
                interpolation="nearest",
            )
    for col, title in enumerate(["image", *maps]):
        axes[0][col].set_title(title, fontsize=9)
    for ax in axes.flat:
        ax.set_axis_off()
    return save_figure(fig, path)


def plot_attention_comparison(
    models: Mapping[str, nn.Module],
    images: Tensor,
    path: Path | str,
    *,
    batch_size: int = 32,
) -> Path:
    """Fig. 1: for each image a row with the image, then each model's CLS attention heatmap.

    Args:
        models: display name -> pixel-space ViT classifier, in column order (e.g. the baseline
            first, then the elliptical model).
        images: (B, C, H, W) in [0, 1]; one row each, so pass a handful.
        path: PNG to write.

    Returns:
        `path`.
    """
    images = check_images(images)
    if not models:
        raise ConfigError("plot_attention_comparison needs at least one model.")
    maps = {
        name: cls_attention_maps(m, images, batch_size=batch_size) for name, m in models.items()
    }
    return _draw_comparison(images, maps, Path(path))


def _save_grid(heatmap: Tensor, path: Path) -> Path:
    """The raw map as a PNG with one pixel per patch (min-max scaled, colour-mapped)."""
    from matplotlib.image import imsave

    path.parent.mkdir(parents=True, exist_ok=True)
    imsave(
        path,
        _min_max(heatmap),
        cmap=HEATMAP_CMAP,
        vmin=0,
        vmax=1,
        format="png",
        metadata=PNG_METADATA,
    )
    return path


class AttentionMapsParams(BatchedParams):
    """How many images to draw."""

    n_images: int = Field(default=4, gt=0)  # the first n images are drawn (all are measured)


@DIAGNOSTICS.register("attention_maps")
class AttentionMaps(Diagnostic):
    """Last-layer CLS attention over patches, mean over heads (Fig. 1).

    values: `grid` ([rows, cols]), `cls_attention_entropy` (mean over all images, see
    `cls_attention_entropy`), `cls_attention_maps` (the drawn images' maps, unscaled, as
    nested lists). With `out_dir`, writes `attention_maps.png` (each image beside its heatmap)
    and `cls_attention_<i>.png` (the raw map of image i, one pixel per patch).
    """

    Params = AttentionMapsParams
    params: AttentionMapsParams

    def run(
        self, model: nn.Module, images: Tensor, *, out_dir: Path | None = None
    ) -> DiagnosticOutput:
        maps = cls_attention_maps(model, images, batch_size=self.params.batch_size)
        drawn = min(self.params.n_images, maps.shape[0])
        entropy = float(cls_attention_entropy(maps).mean())
        values = {
            "grid": list(maps.shape[1:]),
            "cls_attention_entropy": entropy,
            "cls_attention_maps": maps[:drawn].tolist(),
        }
        logger.info("CLS attention entropy %.4f on a %s grid", entropy, values["grid"])
        files = []
        if out_dir is not None:
            files.append(
                _draw_comparison(
                    images[:drawn], {"CLS attention": maps[:drawn]}, out_dir / "attention_maps.png"
                )
            )
            files.extend(
                _save_grid(maps[i], out_dir / f"cls_attention_{i}.png") for i in range(drawn)
            )
        return DiagnosticOutput(values=values, files=files)
