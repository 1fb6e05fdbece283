"""CLS attention maps: where the class token looks in the last layer.

Reproduces Fig. 1 of Elliptical Attention (NeurIPS 2024); `plot_attention_comparison` draws the
same images under several models. What is drawn and what `cls_attention_entropy` says:
docs/diagnostics.md, `attention_maps`.
"""

from __future__ import annotations

import logging
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor, nn

from robench._core.errors import ConfigError
from robench.diagnostics.base import (
    Diagnostic,
    DiagnosticOutput,
    check_images,
    inference,
    iter_batches,
    model_device,
)
from robench.diagnostics.capture import collect_layers, find_transformer
from robench.diagnostics.params import AttentionMapsParams
from robench.results.plots.figures import PNG_METADATA, architecture_label, new_figure, save_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "AttentionMaps",
    "AttentionMapsParams",
    "attention_comparison_figure",
    "cls_attention_entropy",
    "cls_attention_maps",
    "plot_attention_comparison",
]

logger = logging.getLogger(__name__)

HEATMAP_CMAP = "inferno"
HEATMAP_ALPHA = 0.6  # heatmap over the grey image
RIGHT, WRONG = "#009E73", "#D55E00"  # prediction text colours (Okabe-Ito green, vermillion)


def cls_attention_maps(model: nn.Module, images: Tensor, *, batch_size: int = 32) -> Tensor:
    """The last layer's CLS-to-patch attention of `images` ((B, C, H, W) in [0, 1]), mean over
    heads, on the patch grid: (B, rows, cols) float32 on the CPU, each map summing to at most 1
    (the CLS token's attention to itself and to register tokens is left out). A ConfigError
    when `model` holds no timm ViT with a class token (global-pool ViTs have none)."""
    images = check_images(images, "CLS attention maps (an image's patch grid)")
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
    """Entropy of each nonnegative map (B, rows, cols), renormalised to a distribution over
    patches, divided by log(P): (B,) float64, 1 for uniform attention, 0 for a single patch."""
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


def _predict(model: nn.Module, images: Tensor, batch_size: int) -> list[int]:
    """The model's top-1 class for each image."""
    device = model_device(model, images.device)
    with inference(model):
        top = [
            model(batch).argmax(dim=-1).cpu() for batch in iter_batches(images, batch_size, device)
        ]
    return torch.cat(top).tolist()


def _last_layer(model: nn.Module) -> tuple[int, int | None]:
    """(number of blocks, heads of the last block's attention, None when it does not say)."""
    parts = find_transformer(model, "CLS attention maps")
    heads = getattr(parts.attentions[-1], "num_heads", None)
    return parts.depth, heads if isinstance(heads, int) else None


def _describe(depth: int, heads: int | None) -> str:
    over = f"mean over {heads} heads" if heads is not None else "mean over heads"
    return f"last layer (layer {depth} of {depth}), {over}"


@dataclass(frozen=True)
class _Column:
    """One model's column: its heatmaps and predictions for the drawn images."""

    header: str  # the model's name, plus its layer/heads when models differ in them
    maps: Tensor  # (B, rows, cols), unscaled
    predictions: list[int]  # top-1 class per image


def _columns(
    models: Mapping[str, nn.Module], maps: Mapping[str, Tensor], images: Tensor, batch_size: int
) -> tuple[str, list[_Column]]:
    """The figure's title and one column per model."""
    shapes = {name: _last_layer(m) for name, m in models.items()}
    shared = len(set(shapes.values())) == 1
    title = "CLS attention, " + (
        _describe(*next(iter(shapes.values()))) if shared else "last layer, mean over heads"
    )
    columns = [
        _Column(
            header=name if shared else f"{name}\n({_describe(*shapes[name])})",
            maps=maps[name],
            predictions=_predict(m, images, batch_size),
        )
        for name, m in models.items()
    ]
    return title, columns


def _class_name(index: int, class_names: Sequence[str] | None) -> str:
    if class_names is not None and 0 <= index < len(class_names):
        return class_names[index]
    return f"class {index}"


def _prediction_text(predicted: int, label: int | None, names: Sequence[str] | None) -> str:
    text = f"pred: {_class_name(predicted, names)}"
    if label is None:
        return text
    return text + (" ✓" if predicted == label else " ✗ (wrong)")


def _comparison_figure(
    images: Tensor,
    columns: Sequence[_Column],
    *,
    title: str,
    labels: Sequence[int] | None = None,
    class_names: Sequence[str] | None = None,
) -> Figure:
    """One row per image: the image (true class below), then each model's heatmap over the
    image in grey (its prediction below), a shared colour bar and `title` on top."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize

    pictures = images.detach().float().cpu()
    n_rows, n_cols = pictures.shape[0], 1 + len(columns)
    height, width = pictures.shape[-2:]
    extent = (-0.5, width - 0.5, height - 0.5, -0.5)  # heatmap cells cover their patches
    fig = new_figure(1.9 * n_cols + 1.2, 2.1 * n_rows + 0.7)
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    for row in range(n_rows):
        picture = _display(pictures[row])
        grey = picture if picture.dim() == 2 else picture.mean(dim=-1)  # (H, W)
        axes[row][0].imshow(picture.numpy(), cmap="gray", vmin=0, vmax=1)
        label = labels[row] if labels is not None else None
        if label is not None:
            axes[row][0].set_xlabel(f"true: {_class_name(label, class_names)}", fontsize=8)
        for col, column in enumerate(columns, start=1):
            ax = axes[row][col]
            ax.imshow(grey.numpy(), cmap="gray", vmin=0, vmax=1)
            ax.imshow(
                _min_max(column.maps[row]),
                cmap=HEATMAP_CMAP,
                vmin=0,
                vmax=1,
                alpha=HEATMAP_ALPHA,
                extent=extent,
                interpolation="nearest",
            )
            predicted = column.predictions[row]
            colour = "0.15" if label is None else RIGHT if predicted == label else WRONG
            ax.set_xlabel(_prediction_text(predicted, label, class_names), fontsize=8, color=colour)
    headers = ["image", *(textwrap.fill(c.header, 24, break_long_words=False) for c in columns)]
    for col, header in enumerate(headers):
        axes[0][col].set_title(header, fontsize=8.5)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_visible(False)
    bar = fig.colorbar(
        ScalarMappable(norm=Normalize(0, 1), cmap=HEATMAP_CMAP),
        ax=list(axes[:, 1:].flat),
        shrink=0.6 if n_rows > 2 else 0.9,
        aspect=25,
    )
    bar.set_label(
        "attention, min-max scaled per map\n(0 = least, 1 = most attended patch)", fontsize=8
    )
    bar.ax.tick_params(labelsize=7)
    fig.suptitle(title, fontsize=10)
    return fig


def attention_comparison_figure(
    models: Mapping[str, nn.Module],
    images: Tensor,
    *,
    labels: Sequence[int] | None = None,
    class_names: Sequence[str] | None = None,
    batch_size: int = 32,
) -> Figure:
    """See `plot_attention_comparison`."""
    images = check_images(images, "plot_attention_comparison (an image's patch grid)")
    if not models:
        raise ConfigError("plot_attention_comparison needs at least one model.")
    if labels is not None and len(labels) != images.shape[0]:
        raise ConfigError(
            f"plot_attention_comparison got {len(labels)} labels for {images.shape[0]} images; "
            "pass one label per image."
        )
    maps = {
        name: cls_attention_maps(m, images, batch_size=batch_size) for name, m in models.items()
    }
    title, columns = _columns(models, maps, images, batch_size)
    return _comparison_figure(images, columns, title=title, labels=labels, class_names=class_names)


def plot_attention_comparison(
    models: Mapping[str, nn.Module],
    images: Tensor,
    path: Path | str,
    *,
    labels: Sequence[int] | None = None,
    class_names: Sequence[str] | None = None,
    batch_size: int = 32,
) -> Path:
    """Fig. 1 as the PNG `path`: a row per image ((B, C, H, W) in [0, 1]; pass a handful),
    the image (its true class from `labels` below), then the CLS attention heatmap of each of
    `models` (display name -> pixel-space ViT, in column order: e.g. the baseline, then the
    elliptical model), each with the model's prediction below, marked right or wrong when
    `labels` are given. The title names the layer and the heads averaged; a colour bar gives
    the scale (each map min-max scaled). `class_names`: index -> name, else "class k"."""
    fig = attention_comparison_figure(
        models, images, labels=labels, class_names=class_names, batch_size=batch_size
    )
    return save_figure(fig, path)


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


class AttentionMaps(Diagnostic):
    """Last-layer CLS attention over patches, mean over heads (Fig. 1).

    values: `grid` ([rows, cols]), `cls_attention_entropy` (mean over all images, see
    `cls_attention_entropy`), `cls_attention_maps` (the drawn images' maps, unscaled, as
    nested lists). With `out_dir`, writes `attention_maps.png` (each image beside its heatmap
    and the model's prediction, headed by `title`, default the architecture's name) and
    `cls_attention_<i>.png` (the raw map of image i, one pixel per patch).
    """

    Params = AttentionMapsParams
    params: AttentionMapsParams

    def measure(
        self, model: nn.Module, images: Tensor, out_dir: Path | None, title: str | None
    ) -> DiagnosticOutput:
        """See `Diagnostic.run`; `title` names the model in the figure. Token ids are a
        ConfigError: there is no image to draw."""
        check_images(images, "the attention_maps diagnostic (CLS attention on an image)")
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
            network = find_transformer(model, "CLS attention maps").network
            name = title if title is not None else architecture_label(network)
            title, columns = _columns(
                {name: model}, {name: maps[:drawn]}, images[:drawn], self.params.batch_size
            )
            fig = _comparison_figure(images[:drawn], columns, title=title)
            files.append(save_figure(fig, out_dir / "attention_maps.png"))
            files.extend(
                _save_grid(maps[i], out_dir / f"cls_attention_{i}.png") for i in range(drawn)
            )
        return DiagnosticOutput(values=values, files=files)
