"""Figures of accuracy under common corruptions (ImageNet-C style), read off reports: only
what a report holds is drawn (any corruptions, severities and datasets); docs/architecture.md,
"Figures".
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robench._core.corruption_names import GROUP_OF
from robench.results.plots.figures import (
    LINE_STYLES,
    NOTE_SIZE,
    LineStyle,
    _colours,
    legend_beside,
    new_figure,
    save_figure,
    seeds_note,
    wrapped,
)

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure
    from matplotlib.image import AxesImage

    from robench.results.report.schema import MetricValue, Report


logger = logging.getLogger(__name__)

_METRIC_NAMES = {"top1": "top-1", "top5": "top-5", "miou": "mIoU", "ece": "ECE"}
# Metrics that are not accuracies, by their own label.
_METRIC_LABELS = {"miou": "mIoU (%)", "ece": "ECE (%)"}
# Lower-is-better metrics: the colour map reversed (bright stays good) and a scale from 0 to
# the largest cell rounded up to 10 %, as calibration errors rarely reach 100 %.
_LOWER_IS_BETTER = {"ece"}
_MAX_SMALL_MULTIPLES = 19
CMAP = "viridis"  # perceptually uniform, readable in greyscale and with colour-vision deficiency


@dataclass(frozen=True)
class CorruptionCell:
    percent: float  # accuracy in %
    ci95: tuple[float, float]  # 95% interval in %
    n_samples: int  # images it was measured on


@dataclass(frozen=True)
class CorruptionGrid:
    """The corruption results of one model on one dataset."""

    model: str  # legend name of the model
    dataset: str  # `PerturbationResult.dataset` of the corrupted images
    cells: Mapping[tuple[str, int], CorruptionCell]  # (corruption, severity) -> accuracy
    clean: CorruptionCell | None  # the clean accuracy, when the report has one
    clean_dataset: str | None  # where `clean` was measured (another dataset than ImageNet-C's)
    seed: int
    missing: int = 0  # corruption entries of the suite the report lists as not evaluated

    @property
    def corruptions(self) -> list[str]:
        return _ordered(c for c, _ in self.cells)

    @property
    def severities(self) -> list[int]:
        return sorted({s for _, s in self.cells})

    def mean_at(
        self, severity: int, within: Collection[tuple[str, int]] | None = None
    ) -> tuple[CorruptionCell, int] | None:
        """Accuracy averaged over the corruptions measured at `severity` (of `within`, when
        given), with their number; None when there are none. The interval is the mean of the
        interval endpoints: conservative (as wide as if all failed on the same images)."""
        cells = [
            cell
            for key, cell in self.cells.items()
            if key[1] == severity and (within is None or key in within)
        ]
        if not cells:
            return None
        n = len(cells)
        low, high = sum(c.ci95[0] for c in cells) / n, sum(c.ci95[1] for c in cells) / n
        mean = sum(c.percent for c in cells) / n
        return CorruptionCell(mean, (low, high), min(c.n_samples for c in cells)), n


def shared_cells(grids: Sequence[CorruptionGrid]) -> dict[str, set[tuple[str, int]] | None]:
    """Dataset -> the (corruption, severity) cells every model on it has, which means are
    taken over so that models compare; None where they share none (own cells then)."""
    shared: dict[str, set[tuple[str, int]]] = {}
    for grid in grids:
        keys = set(grid.cells)
        shared[grid.dataset] = shared[grid.dataset] & keys if grid.dataset in shared else keys
    return {dataset: cells or None for dataset, cells in shared.items()}


def _ordered(names: Iterable[str]) -> list[str]:
    """Known corruptions in `GROUP_OF` order, then the others alphabetically."""
    known = list(GROUP_OF)
    unique = set(names)
    return [n for n in known if n in unique] + sorted(unique - set(known))


def _cell(value: MetricValue, n_samples: int) -> CorruptionCell:
    return CorruptionCell(100 * value.value, (100 * value.ci95[0], 100 * value.ci95[1]), n_samples)


def _severity(raw: object) -> int | None:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw != int(raw):
        return None
    return int(raw)


def corruption_grids(
    reports: Mapping[str, Report], *, metric: str = "top1"
) -> list[CorruptionGrid]:
    """One grid per (model, dataset with corruption results), in the order of `reports`
    (model name -> report): results of kind "corruption" with a `corruption` and an integer
    `severity` that have `metric`. The clean accuracy is the clean result on the same dataset,
    else the report's only one (pre-rendered ImageNet-C is compared with clean ImageNet)."""
    grids = []
    for model, report in reports.items():
        by_dataset: dict[str, dict[tuple[str, int], CorruptionCell]] = {}
        cleans: dict[str, CorruptionCell] = {}
        for result in report.results:
            value = result.metrics.get(metric)
            if value is None:
                continue
            if result.kind == "clean":
                cleans.setdefault(result.dataset, _cell(value, result.n_samples))
                continue
            name = result.params.get("corruption")
            severity = _severity(result.params.get("severity"))
            if result.kind != "corruption" or not isinstance(name, str) or severity is None:
                continue
            cells = by_dataset.setdefault(result.dataset, {})
            if (name, severity) in cells:
                logger.warning("%s: %s severity %d twice; kept the first", model, name, severity)
                continue
            cells[(name, severity)] = _cell(value, result.n_samples)
        missing = sum(m.kind == "corruption" for m in report.missing)
        for dataset, cells in by_dataset.items():
            only = next(iter(cleans)) if len(cleans) == 1 else None
            clean_dataset = dataset if dataset in cleans else only
            clean = cleans[clean_dataset] if clean_dataset is not None else None
            other = clean_dataset if clean_dataset != dataset else None
            grids.append(CorruptionGrid(model, dataset, cells, clean, other, report.seed, missing))
    return grids


# --- notes --------------------------------------------------------------------------------------


def _metric_label(metric: str) -> str:
    return _METRIC_LABELS.get(metric) or f"{_METRIC_NAMES.get(metric, metric)} accuracy (%)"


def _count_note(grids: Sequence[CorruptionGrid], per: str) -> str:
    """ "n = 500 images per cell; clean: n = 1000"; seeds; suite entries not evaluated."""
    counts = Counter(c.n_samples for g in grids for c in g.cells.values())
    usual = counts.most_common(1)[0][0]
    parts = [f"n = {usual} images per {per}"]
    if len(counts) > 1:
        parts[0] = f"n = {min(counts)} to {max(counts)} images per {per} (mostly {usual})"
    clean = sorted({g.clean.n_samples for g in grids if g.clean is not None})
    if clean and clean != [usual]:
        parts.append(f"clean: n = {' or '.join(map(str, clean))}")
    parts.append(seeds_note(sorted({g.seed for g in grids})))
    missing = {g.model: g.missing for g in grids if g.missing}
    if missing:
        listed = ", ".join(f"{m}: {k}" for m, k in missing.items())
        parts.append(f"corruption entries not evaluated ({listed}; see the report's `missing`)")
    others = sorted({g.clean_dataset for g in grids if g.clean is not None and g.clean_dataset})
    if others:
        parts.append(f"clean accuracy measured on {', '.join(others)}")
    return "; ".join(parts)


def _several_datasets(grids: Sequence[CorruptionGrid]) -> bool:
    return len({g.dataset for g in grids}) > 1


def _panel_name(grid: CorruptionGrid, with_dataset: bool) -> str:
    return f"{grid.model} · {grid.dataset}" if with_dataset else grid.model


def _display(corruption: str) -> str:
    return corruption.replace("_", " ")


# --- heatmap --------------------------------------------------------------------------------------


def _text_colour(rgba: Sequence[float]) -> str:
    """Black or white, whichever contrasts more with the cell (WCAG relative luminance)."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgba[:3])
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.179 else "white"


def _colour_scale(grids: Sequence[CorruptionGrid], metric: str) -> tuple[Any, Any]:
    """The colour map and the 0-100 % (accuracies) or 0-ceiling (ECE) scale."""
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    if metric not in _LOWER_IS_BETTER:
        return colormaps[CMAP], Normalize(0.0, 100.0)
    largest = max(c.percent for g in grids for c in g.cells.values())
    return colormaps[CMAP].reversed(), Normalize(0.0, min(100.0, 10 * math.ceil(largest / 10)))


def _heatmap_panel(
    ax: Axes,
    grid: CorruptionGrid,
    all_rows: Mapping[str, list[str]],
    all_cols: Mapping[str, list[int]],
    show_rows: bool,
    scale: tuple[Any, Any],
) -> AxesImage:
    """`grid` on the rows and columns of its dataset (corruptions, severities)."""
    import numpy as np

    rows, cols = all_rows[grid.dataset], all_cols[grid.dataset]
    cmap, norm = scale
    data = np.full((len(rows), len(cols)), np.nan)
    for (corruption, severity), cell in grid.cells.items():
        data[rows.index(corruption), cols.index(severity)] = cell.percent
    ax.set_facecolor("0.93")  # cells not measured
    image = ax.imshow(np.ma.masked_invalid(data), cmap=cmap, norm=norm, aspect="auto")
    for i, j in np.ndindex(data.shape):
        value = data[i, j]
        if np.isnan(value):
            ax.text(j, i, "–", ha="center", va="center", fontsize=8, color="0.45")
        else:
            colour = _text_colour(cmap(norm(value)))
            ax.text(j, i, f"{value:.1f}", ha="center", va="center", fontsize=8, color=colour)
    for i in range(1, len(rows)):  # white rules between families
        if GROUP_OF.get(rows[i]) != GROUP_OF.get(rows[i - 1]):
            ax.axhline(i - 0.5, color="white", linewidth=2.5)
    ax.set_xticks(range(len(cols)), [str(s) for s in cols])
    ax.set_yticks(range(len(rows)), [_display(r) for r in rows] if show_rows else [])
    ax.tick_params(length=0, labelsize=8)
    ax.set_xlabel("severity", fontsize=8)
    ax.spines[:].set_visible(False)
    return image


def _panel_title(grid: CorruptionGrid, name: str, within: set[tuple[str, int]] | None) -> str:
    cells = [c for key, c in grid.cells.items() if within is None or key in within]
    stats = f"mean of cells {sum(c.percent for c in cells) / len(cells):.1f}%"
    if grid.clean is not None:
        stats = f"clean {grid.clean.percent:.1f}% · {stats}"
    return f"{name}\n{stats}"


def corruption_heatmap_figure(
    reports: Mapping[str, Report], *, metric: str = "top1", title: str | None = None
) -> Figure | None:
    """Accuracy (or ECE) per (corruption, severity): one heatmap per model (`reports`: panel
    title -> report), two a row; None without corruptions. Panels of one dataset share rows
    and columns (a cell a model lacks is grey with a dash) and all share one colour scale.
    `metric`: an accuracy stored as a fraction, or "ece"; `title` by default names it."""
    grids = corruption_grids(reports, metric=metric)
    if not grids:
        return None
    rows = {
        d: _ordered(c for g in grids if g.dataset == d for c in g.corruptions)
        for d in dict.fromkeys(g.dataset for g in grids)
    }
    cols = {d: sorted({s for g in grids if g.dataset == d for s in g.severities}) for d in rows}
    ncols = min(2, len(grids))
    nrows = math.ceil(len(grids) / ncols)
    # Room for the corruption names, cells of about 0.6 x 0.3 in, titles and the colour bar.
    panel_w = 1.3 + 0.62 * max(3, *map(len, cols.values()))
    panel_h = 1.0 + 0.3 * max(map(len, rows.values()))
    width = max(ncols * panel_w + 1.2, 5.0)
    fig = new_figure(width, nrows * panel_h + 1.2)
    quantity = "Calibration error" if metric in _LOWER_IS_BETTER else "Accuracy"
    fig.suptitle(
        title or f"{quantity} under common corruptions ({_METRIC_NAMES.get(metric, metric)})"
    )
    scale = _colour_scale(grids, metric)
    body = fig.subfigures(1, 1, squeeze=False)[0, 0]
    shared = shared_cells(grids)
    gaps = any(len(g.cells) < len(rows[g.dataset]) * len(cols[g.dataset]) for g in grids)
    note = f"{_count_note(grids, 'cell')}\n{_heatmap_note(grids, shared, gaps, metric)}"
    body.suptitle(
        wrapped(note, int(14 * width)), x=0.01, ha="left", fontsize=NOTE_SIZE, color="0.25"
    )
    axes = body.subplots(nrows, ncols, squeeze=False)
    several = _several_datasets(grids)
    images = []
    for k, grid in enumerate(grids):
        ax = axes[k // ncols][k % ncols]
        first = k % ncols == 0 or grids[k - k % ncols].dataset != grid.dataset
        images.append(_heatmap_panel(ax, grid, rows, cols, first, scale))
        name = wrapped(_panel_name(grid, several), int(11 * panel_w))  # 9 pt: ~11 chars/in
        ax.set_title(_panel_title(grid, name, shared[grid.dataset]), fontsize=9)
    for ax in axes.flat[len(grids) :]:
        ax.remove()
    used = list(axes.flat[: len(grids)])
    bar = body.colorbar(images[0], ax=used, fraction=0.05, aspect=30, pad=0.02)
    bar.set_label(_metric_label(metric), fontsize=8)
    bar.ax.tick_params(labelsize=8)
    return fig


def _heatmap_note(
    grids: Sequence[CorruptionGrid],
    shared: Mapping[str, set[tuple[str, int]] | None],
    gaps: bool,
    metric: str = "top1",
) -> str:
    # mIoU is not an accuracy: name it; accuracies keep the short word.
    quantity = _METRIC_NAMES[metric] if metric in _METRIC_LABELS else "accuracy"
    parts = [f"cells: {quantity} in %, one colour scale for all panels"]
    if gaps:
        parts.append("–: not measured")
    if any(shared[g.dataset] is None for g in grids):
        parts.append("the models share no cell, so each mean is over the model's own cells")
    elif any(set(g.cells) != shared[g.dataset] for g in grids):
        parts.append("means are over the cells every model has")
    return "; ".join(parts)


# --- accuracy against severity ----------------------------------------------------------------


def _curve(
    grid: CorruptionGrid,
    corruption: str | None,
    within: Collection[tuple[str, int]] | None = None,
) -> tuple[list[int], list[CorruptionCell], list[int]]:
    """x (0 = clean), points and the corruptions behind each: the mean over corruptions (of
    `within`) when `corruption` is None, else that corruption's cells."""
    xs, points, counts = [], [], []
    if grid.clean is not None:
        xs, points, counts = [0], [grid.clean], [0]
    for severity in grid.severities:
        found = grid.mean_at(severity, within if corruption is None else {(corruption, severity)})
        if found is not None:
            xs.append(severity)
            points.append(found[0])
            counts.append(found[1])
    return xs, points, counts


def _draw_curve(
    ax: Axes, xs: list[int], points: list[CorruptionCell], colour: str, style: LineStyle, **kw: Any
) -> None:
    low, high = [p.ci95[0] for p in points], [p.ci95[1] for p in points]
    ax.fill_between(xs, low, high, color=colour, alpha=0.15, linewidth=0)
    ax.plot(xs, [p.percent for p in points], color=colour, linestyle=style, **kw)


def _severity_axes(ax: Axes, ticks: list[int]) -> None:
    ax.set_xticks(ticks, ["clean" if t == 0 else str(t) for t in ticks])
    ax.set_xlim(min(ticks) - 0.25, max(ticks) + 0.25)
    ax.set_ylim(0, 100)
    ax.grid(True, alpha=0.3)


def _styles(grids: Sequence[CorruptionGrid]) -> tuple[dict[str, str], dict[str, LineStyle]]:
    """Model -> colour, dataset -> line style."""
    models = list(dict.fromkeys(g.model for g in grids))
    datasets = list(dict.fromkeys(g.dataset for g in grids))
    styles = {d: LINE_STYLES[i % len(LINE_STYLES)] for i, d in enumerate(datasets)}
    return dict(zip(models, _colours(len(models)), strict=True)), styles


def _mean_note(
    grids: Sequence[CorruptionGrid], shared: Mapping[str, set[tuple[str, int]] | None]
) -> str:
    counts = {n for g in grids for n in _curve(g, None, shared[g.dataset])[2] if n}  # 0: clean
    measured = "measured for every model" if len(grids) > 1 else "measured"
    if counts == {1}:
        what = f"the accuracy under the one corruption {measured}"
    elif len(counts) == 1:
        what = f"the mean over the {counts.pop()} corruptions {measured}"
    else:
        what = f"the mean over the corruptions {measured} at that severity (their number varies)"
    if any(shared[g.dataset] is None for g in grids):
        what = "the mean over the model's own corruptions (the models share none)"
    elif any(set(g.cells) != shared[g.dataset] for g in grids):
        what += "; cells only some models have are left out of it"
    return (
        f"Each point is {what}. Band: 95% interval; for a mean, the mean of the per-corruption "
        "interval endpoints (conservative: as wide as if all corruptions failed on the same "
        "images; not a paired bootstrap)."
    )


def _severity_legend(ax: Axes, colours: Mapping[str, str], styles: Mapping[str, LineStyle]) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    entries: list[tuple[Artist, str]] = [
        (Line2D([], [], color=c, lw=2.5), wrapped(m, 32)) for m, c in colours.items()
    ]
    if len(styles) > 1:
        entries += [(Line2D([], [], color="0.3", linestyle=s), d) for d, s in styles.items()]
    entries.append((Patch(facecolor="0.5", alpha=0.3), "95% interval"))
    legend_beside(ax, entries)


def _small_multiples(
    sub: SubFigure, grids: Sequence[CorruptionGrid], corruptions: list[str], ticks: list[int]
) -> None:
    colours, styles = _styles(grids)
    ncols = min(5, len(corruptions))
    nrows = math.ceil(len(corruptions) / ncols)
    axes = sub.subplots(nrows, ncols, squeeze=False)
    sub.suptitle("Per corruption", fontsize=9, x=0.01, ha="left")
    for k, corruption in enumerate(corruptions):
        ax = axes[k // ncols][k % ncols]
        for grid in grids:
            xs, points, _ = _curve(grid, corruption)
            if len(points) > (grid.clean is not None):
                colour, style = colours[grid.model], styles[grid.dataset]
                _draw_curve(ax, xs, points, colour, style, marker=".", label=grid.model)
        _severity_axes(ax, ticks)
        ax.set_yticks([0, 50, 100])
        ax.set_title(_display(corruption), fontsize=8, pad=2)
        ax.tick_params(labelsize=7)
        # Tick labels only under the last panel of a column and left of the first of a row.
        ax.tick_params(labelbottom=k + ncols >= len(corruptions), labelleft=k % ncols == 0)
    for ax in axes.flat[len(corruptions) :]:
        ax.remove()
    sub.supylabel("accuracy (%)", fontsize=8)
    sub.supxlabel("severity", fontsize=8)


def accuracy_vs_severity_figure(
    reports: Mapping[str, Report], *, metric: str = "top1", title: str | None = None
) -> Figure | None:
    """Accuracy against corruption severity; None when no report has corruption results.

    On top, the accuracy averaged over the corruptions measured at each severity, one line
    per model (line style per dataset) from its clean accuracy at severity 0, with a 95% band.
    Under it, for 2 to 19 corruptions, one small panel per corruption. `reports`: legend name
    -> report; `metric` and `title` as for `corruption_heatmap_figure`."""
    grids = corruption_grids(reports, metric=metric)
    if not grids:
        return None
    colours, styles = _styles(grids)
    corruptions = _ordered(c for g in grids for c in g.corruptions)
    shared = shared_cells(grids)
    ticks = sorted({x for g in grids for x in _curve(g, None, shared[g.dataset])[0]})
    multiples = 1 < len(corruptions) <= _MAX_SMALL_MULTIPLES
    ncols = min(5, len(corruptions))
    grid_h = 0.5 + 1.55 * math.ceil(len(corruptions) / ncols) if multiples else 0.0
    main_h = 4.4
    fig = new_figure(max(8.0, 1.9 * ncols + 0.6) if multiples else 8.0, main_h + grid_h)
    fig.suptitle(
        title or f"Accuracy against corruption severity ({_METRIC_NAMES.get(metric, metric)})"
    )
    if multiples:
        top, bottom = fig.subfigures(2, 1, squeeze=False, height_ratios=[main_h, grid_h])[:, 0]
        _small_multiples(bottom, grids, corruptions, ticks)
    else:
        top = fig.subfigures(1, 1, squeeze=False)[0, 0]
    ax = top.add_subplot()
    for grid in grids:
        xs, points, _ = _curve(grid, None, shared[grid.dataset])
        colour, style = colours[grid.model], styles[grid.dataset]
        label = _panel_name(grid, _several_datasets(grids))
        _draw_curve(ax, xs, points, colour, style, marker="o", label=label)
    _severity_axes(ax, ticks)
    mean = ", mean over corruptions" if len(corruptions) > 1 else ""
    ax.set(xlabel="severity (clean = uncorrupted images)", ylabel=f"{_metric_label(metric)}{mean}")
    note = f"{_count_note(grids, 'corruption and severity')}\n{_mean_note(grids, shared)}"
    ax.set_title(wrapped(note, 100), fontsize=NOTE_SIZE, loc="left", color="0.25")
    _severity_legend(ax, colours, styles)
    return fig


# --- files ------------------------------------------------------------------------------------

# File name suffix -> figure builder; a builder's None (nothing to draw) writes no file.
CORRUPTION_FIGURES: dict[str, Callable[..., Figure | None]] = {
    "corruptions-heatmap": corruption_heatmap_figure,
    "corruptions-severity": accuracy_vs_severity_figure,
}


def plot_corruption_figures(
    reports: Mapping[str, Report], out_dir: Path, stem: str, *, metric: str = "top1"
) -> list[Path]:
    """Write `<stem>-corruptions-heatmap.png` and `-severity.png` (those that apply) into
    `out_dir`; return the paths written."""
    paths = []
    for suffix, build in CORRUPTION_FIGURES.items():
        fig = build(reports, metric=metric)
        if fig is not None:
            paths.append(save_figure(fig, Path(out_dir) / f"{stem}-{suffix}.png"))
    return paths
