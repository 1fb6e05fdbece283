"""Figures of robench's results, drawn with matplotlib's Agg backend (no display needed).

- `plot_collapse_curves`: token similarity per layer for several models (Elliptical Attention,
  NeurIPS 2024, Fig. 3 and 6).
- `plot_redundancy`: mean L2 distance between heads per layer, with its spread (Table 18).
- `plot_accuracy_vs_eps`: accuracy against the attack budget, eps shown as k/255.

Figures are built on `matplotlib.figure.Figure` with an Agg canvas, never through pyplot, so
no global figure state or interactive backend is touched, and PNGs are written without the
matplotlib version in their metadata: the same data gives the same bytes. matplotlib is
imported when a figure is drawn, not when robench is imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robench.errors import ConfigError
from robench.pixel_units import display_pixel_value

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "new_figure",
    "plot_accuracy_vs_eps",
    "plot_collapse_curves",
    "plot_redundancy",
    "save_figure",
]

DPI = 100
# Leave matplotlib's version out of PNG metadata: the same data gives the same bytes.
PNG_METADATA: dict[str, Any] = {"Software": None}


def new_figure(width: float, height: float) -> Figure:
    """A figure of `width` x `height` inches on an Agg canvas, with constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Figure, path: Path | str) -> Path:
    """Write `fig` as PNG to `path` (parents created) without version metadata; return it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=DPI, metadata=PNG_METADATA)
    return path


def _check_series(series: Mapping[str, Sequence[object]], what: str) -> None:
    if not series:
        raise ConfigError(f"{what}: nothing to plot; pass at least one named series.")
    empty = [name for name, points in series.items() if len(points) == 0]
    if empty:
        raise ConfigError(f"{what}: series {empty} have no points; drop them or fill them.")


def _per_layer_axes(fig: Figure, ylabel: str, depth: int) -> Axes:
    ax = fig.add_subplot()
    ax.set_xlabel("layer")
    ax.set_ylabel(ylabel)
    ax.set_xticks(range(1, depth + 1))
    ax.grid(True, alpha=0.3)
    return ax


def plot_collapse_curves(
    curves: Mapping[str, Sequence[float]],
    path: Path | str,
    *,
    title: str = "Representation collapse",
) -> Path:
    """One line per model: mean pairwise cosine similarity of tokens after each layer.

    Args:
        curves: model name -> per-layer values (the `collapse` diagnostic's `per_layer`).
        path: PNG to write.
    """
    _check_series(curves, "plot_collapse_curves")
    fig = new_figure(5.0, 3.5)
    depth = max(len(values) for values in curves.values())
    ax = _per_layer_axes(fig, "mean pairwise cosine similarity", depth)
    for name, values in curves.items():
        ax.plot(range(1, len(values) + 1), list(values), marker="o", label=name)
    ax.set_title(title)
    ax.legend()
    return save_figure(fig, path)


def plot_redundancy(
    per_layer_mean: Mapping[str, Sequence[float]],
    path: Path | str,
    *,
    per_layer_std: Mapping[str, Sequence[float]] | None = None,
    title: str = "Head redundancy",
) -> Path:
    """One line per model: mean L2 distance between heads per layer, +- std when given.

    Args:
        per_layer_mean: model name -> per-layer means (`head_redundancy`'s `per_layer_mean`).
        path: PNG to write.
        per_layer_std: model name -> per-layer standard deviations, drawn as error bars.
    """
    _check_series(per_layer_mean, "plot_redundancy")
    stds = per_layer_std or {}
    fig = new_figure(5.0, 3.5)
    depth = max(len(values) for values in per_layer_mean.values())
    ax = _per_layer_axes(fig, "mean L2 distance between heads", depth)
    for name, values in per_layer_mean.items():
        std = stds.get(name)
        ax.errorbar(
            range(1, len(values) + 1),
            list(values),
            yerr=list(std) if std is not None else None,
            marker="o",
            capsize=3,
            label=name,
        )
    ax.set_title(title)
    ax.legend()
    return save_figure(fig, path)


def plot_accuracy_vs_eps(
    series: Mapping[str, Sequence[tuple[float, float]]],
    path: Path | str,
    *,
    ylabel: str = "accuracy",
    title: str = "Accuracy under attack",
) -> Path:
    """One line per model: accuracy against eps (pixel units), ticks labelled "k/255".

    Args:
        series: model name -> (eps, accuracy) points, in any order.
        path: PNG to write.
        ylabel: label of the accuracy axis (say whether it is a fraction or a percentage).
    """
    _check_series(series, "plot_accuracy_vs_eps")
    fig = new_figure(5.0, 3.5)
    ax = fig.add_subplot()
    for name, points in series.items():
        ordered = sorted(points)
        ax.plot([e for e, _ in ordered], [a for _, a in ordered], marker="o", label=name)
    ticks = sorted({float(e) for points in series.values() for e, _ in points})
    ax.set_xticks(ticks, [display_pixel_value(e) for e in ticks])
    ax.set_xlabel("eps (L-inf, pixel units)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return save_figure(fig, path)
