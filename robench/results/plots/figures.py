"""Figures of robench's results: accuracy against the L-inf budget and the per-layer
diagnostics' curves, with the helpers every figure module shares (docs/architecture.md,
"Figures": an Agg canvas, never pyplot, and PNGs without a matplotlib version).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from robench._core.errors import ConfigError
from robench._core.units import display_pixel_value
from robench.results.report.attack_names import attack_name

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend

    from robench.results.report.schema import Report


DPI = 100
# Leave matplotlib's version out of PNG metadata: the same data gives the same bytes.
PNG_METADATA: dict[str, Any] = {"Software": None}
# Okabe-Ito: distinguishable with colour-vision deficiencies and in greyscale print.
MODEL_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
NOTE_SIZE = 8


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


def architecture_label(network: object) -> str:
    """The name a figure gives a model: timm's architecture name, else the class name."""
    cfg = getattr(network, "pretrained_cfg", None)
    if isinstance(cfg, Mapping) and cfg.get("architecture"):
        return str(cfg["architecture"])
    return type(network).__name__


def _check_series(series: Mapping[str, Sequence[object]], what: str) -> None:
    if not series:
        raise ConfigError(f"{what}: nothing to plot; pass at least one named series.")
    empty = [name for name, points in series.items() if len(points) == 0]
    if empty:
        raise ConfigError(f"{what}: series {empty} have no points; drop them or fill them.")


def wrapped(text: str, width: int) -> str:
    """`text` with each of its lines wrapped at `width` characters."""
    return "\n".join(textwrap.fill(line, width) for line in text.splitlines())


def _titles(fig: Figure, ax: Axes, title: str, note: str | None, width: int | None = 80) -> None:
    """`title` over the figure; `note` under it, wrapped at `width` to stay over the axes."""
    fig.suptitle(title, fontsize=11)
    if note:
        shown = wrapped(note, width) if width else note
        ax.set_title(shown, fontsize=NOTE_SIZE, loc="left", color="0.25")


def figure_legend(fig: Figure, entries: Sequence[tuple[Artist, str]], **style: Any) -> None:
    """A legend of (handle, text) entries on the figure (`loc="outside lower center"`...)."""
    handles, texts = [h for h, _ in entries], [t for _, t in entries]
    fig.legend(handles, texts, fontsize=8, frameon=False, **style)


# --- per-layer diagnostics -------------------------------------------------------------------


def _per_layer_figure(
    series: Mapping[str, Sequence[float]], what: str, ylabel: str
) -> tuple[Figure, Axes]:
    """A checked figure with per-layer axes for `series` (model -> per-layer values)."""
    _check_series(series, what)
    fig = new_figure(5.5, 4.2)
    depth = max(len(values) for values in series.values())
    ax = fig.add_subplot()
    ax.set(xlabel="layer (transformer block)", ylabel=ylabel, xticks=range(1, depth + 1))
    ax.set_xlim(0.6, depth + 0.4)
    ax.grid(True, alpha=0.3)
    return fig, ax


def _bottom_legend(fig: Figure, ax: Axes, band: str | None = None) -> None:
    """The axes' labelled artists below the plot, plus a grey swatch for the bands."""
    handles, labels = ax.get_legend_handles_labels()
    if band is not None:
        from matplotlib.patches import Patch

        handles.append(Patch(facecolor="0.6", alpha=0.4))
        labels.append(band)
    entries = list(zip(handles, labels, strict=True))
    figure_legend(fig, entries, loc="outside lower center", ncols=min(len(handles), 2))


def collapse_figure(
    curves: Mapping[str, Sequence[float]],
    *,
    spread: Mapping[str, Sequence[float]] | None = None,
    spread_label: str = "± 1 std over images",
    title: str = "Representation collapse",
    note: str | None = None,
) -> Figure:
    """One line per model: mean pairwise cosine similarity of tokens after each layer
    (Elliptical Attention, NeurIPS 2024, Fig. 3 and 6).

    `curves`: model name -> per-layer values (the `collapse` diagnostic's `per_layer`);
    `spread`: model name -> per-layer spread (`per_layer_std`), a band the legend calls
    `spread_label`; `note`: a line under the title (sample size, seeds).
    """
    ylabel = "mean pairwise cosine similarity of tokens"
    fig, ax = _per_layer_figure(curves, "plot_collapse_curves", ylabel)
    spreads = spread or {}
    lowest = 0.0
    for colour, (name, values) in zip(_colours(len(curves)), curves.items(), strict=True):
        layers = list(range(1, len(values) + 1))
        ax.plot(layers, list(values), marker="o", color=colour, label=name)
        std = spreads.get(name)
        if std is not None:
            low = [v - s for v, s in zip(values, std, strict=True)]
            high = [v + s for v, s in zip(values, std, strict=True)]
            ax.fill_between(layers, low, high, color=colour, alpha=0.15, linewidth=0)
            lowest = min(lowest, *low)
    # Cosine similarity tops out at 1 (full collapse): a fixed range keeps figures comparable.
    ax.set_ylim(min(lowest, 0.0), 1.0)
    _titles(fig, ax, title, note)
    _bottom_legend(fig, ax, f"shaded: {spread_label}" if spreads else None)
    return fig


def plot_collapse_curves(
    curves: Mapping[str, Sequence[float]], path: Path | str, **options: Any
) -> Path:
    """`collapse_figure(curves, **options)` written to `path` as PNG."""
    return save_figure(collapse_figure(curves, **options), path)


def redundancy_figure(
    per_layer_mean: Mapping[str, Sequence[float]],
    *,
    per_layer_std: Mapping[str, Sequence[float]] | None = None,
    std_label: str = "± 1 std",
    ymax: float | None = None,
    title: str = "Head redundancy",
    note: str | None = None,
) -> Figure:
    """One line per model: mean L2 distance between heads per layer, +- std when given
    (Elliptical Attention, NeurIPS 2024, Table 18).

    `per_layer_std` is drawn as error bars the legend calls "mean `std_label`" (say over
    what: "± 1 std over images x head pairs"); `ymax` tops the y-axis (which starts at 0),
    e.g. the largest possible distance, so figures share a scale (None fits the data).
    """
    ylabel = "L2 distance between heads' attention maps"
    fig, ax = _per_layer_figure(per_layer_mean, "plot_redundancy", ylabel)
    stds = per_layer_std or {}
    top = 0.0
    n = len(per_layer_mean)
    for i, (name, values) in enumerate(per_layer_mean.items()):
        colour = MODEL_COLOURS[i % len(MODEL_COLOURS)]
        shift = (i - (n - 1) / 2) * 0.08  # side by side, so error bars do not hide each other
        std = stds.get(name)
        label = f"{name} (mean {std_label})" if std is not None else f"{name} (mean)"
        ax.errorbar(
            [layer + shift for layer in range(1, len(values) + 1)],
            list(values),
            yerr=list(std) if std is not None else None,
            marker="o",
            capsize=3,
            color=colour,
            label=label,
        )
        top = max(top, *(v + (std[j] if std is not None else 0.0) for j, v in enumerate(values)))
    # Distances are nonnegative: start at 0; a fixed ceiling makes separate figures comparable.
    ax.set_ylim(0.0, max(ymax, top * 1.02) if ymax is not None else top * 1.1)
    _titles(fig, ax, title, note)
    _bottom_legend(fig, ax)
    return fig


def plot_redundancy(
    per_layer_mean: Mapping[str, Sequence[float]], path: Path | str, **options: Any
) -> Path:
    """`redundancy_figure(per_layer_mean, **options)` written to `path` as PNG."""
    return save_figure(redundancy_figure(per_layer_mean, **options), path)


# --- accuracy against the attack budget ------------------------------------------------------


@dataclass(frozen=True)
class AccuracyPoint:
    eps: float  # L-inf budget in pixel units ([0, 1] images); 0 for clean data
    percent: float  # accuracy in %
    ci95: tuple[float, float]  # 95% interval in %
    n_samples: int  # images the value was measured on


@dataclass(frozen=True)
class AccuracySeries:
    """One (model, attack) pair: its points by increasing eps."""

    model: str  # legend name of the model (its colour)
    attack: str  # legend name of the attack (its line style and marker), e.g. "PGD-20"
    kind: str  # registered perturbation kind ("clean", "fgsm", ...)
    points: tuple[AccuracyPoint, ...]
    seed: int | None = None  # the run's seed, stated on the figure

    @property
    def is_sweep(self) -> bool:
        """Several budgets: drawn as a line from the clean point, else as one marker."""
        return len(self.points) > 1


LineStyle = Literal["-", "--", "-.", ":", "none"]
LINE_STYLES: tuple[LineStyle, ...] = ("-", "--", ":", "-.")  # in turn, per result or dataset
# Perturbation kind -> (line style, marker); other kinds take the spare ones in turn.
ATTACK_STYLES: dict[str, tuple[LineStyle, str]] = {
    "clean": ("none", "*"),
    "fgsm": ("--", "s"),
    "pgd": ("-", "o"),
    "spsa": (":", "^"),
    "autoattack": ("-.", "D"),
}
_SPARE_STYLES: tuple[tuple[LineStyle, str], ...] = (
    (":", "v"),
    ("-.", "P"),
    ("--", "X"),
    ("-", "h"),
    (":", "<"),
    ("-.", ">"),
)
# Params that set the budget rather than the attack: they vary along one line.
_BUDGET_PARAMS = {
    "eps",
    "eps_display",
    "budget_display",
    "step_size",
    "step_size_display",
    "max_samples",
}


def accuracy_series(reports: Mapping[str, Report], *, metric: str = "top1") -> list[AccuracySeries]:
    """One series per (model, attack) of `reports` (legend name -> report): `metric` (an
    accuracy stored as a fraction) in % with its 95% intervals. Results of one kind whose
    parameters differ only in the budget form one series; results without `metric`, or
    non-clean ones without an `eps`, are left out."""
    series = []
    for model, report in reports.items():
        groups: dict[tuple[str, str], list[tuple[AccuracyPoint, str]]] = {}
        params: dict[tuple[str, str], Mapping[str, Any]] = {}
        for result in report.results:
            value = result.metrics.get(metric)
            eps = 0.0 if result.kind == "clean" else result.params.get("eps")
            if value is None or not isinstance(eps, int | float):
                continue
            ci95 = (100 * value.ci95[0], 100 * value.ci95[1])
            point = AccuracyPoint(float(eps), 100 * value.value, ci95, result.n_samples)
            key = (result.kind, _without_budget(result.params))
            groups.setdefault(key, []).append((point, result.name))
            params.setdefault(key, result.params)
        taken: set[str] = set()
        for key, members in groups.items():
            attack = attack_name(key[0], params[key])
            if attack in taken:  # another parameter set of the same attack
                attack = f"{attack} ({', '.join(name for _, name in members)})"
            taken.add(attack)
            points = tuple(sorted((p for p, _ in members), key=lambda p: p.eps))
            series.append(AccuracySeries(model, attack, key[0], points, seed=report.seed))
    return series


def _without_budget(params: Mapping[str, Any]) -> str:
    return repr(sorted((k, repr(v)) for k, v in params.items() if k not in _BUDGET_PARAMS))


def _colours(n: int) -> list[str]:
    return [MODEL_COLOURS[i % len(MODEL_COLOURS)] for i in range(n)]


def _attack_styles(series: Sequence[AccuracySeries]) -> dict[str, tuple[LineStyle, str]]:
    """Attack name -> (line style, marker): its kind's style, or a spare one not yet used."""
    styles: dict[str, tuple[LineStyle, str]] = {}
    for s in series:
        if s.attack in styles:
            continue
        own = ATTACK_STYLES.get(s.kind)
        used = set(styles.values())
        spare = [style for style in _SPARE_STYLES if style not in used]
        if own is None or own in used:
            own = spare[0] if spare else _SPARE_STYLES[len(styles) % len(_SPARE_STYLES)]
        styles[s.attack] = own
    return styles


def _sample_note(series: Sequence[AccuracySeries]) -> str:
    """ "n = 500 images per point; SPSA, AutoAttack: n = 50" and the seeds."""
    counts: dict[str, set[int]] = {}
    for s in series:
        counts.setdefault(s.attack, set()).update(p.n_samples for p in s.points)
    usual = Counter(p.n_samples for s in series for p in s.points).most_common(1)[0][0]
    exceptions: dict[str, list[str]] = {}
    for attack, ns in counts.items():
        if ns != {usual}:
            exceptions.setdefault(" or ".join(map(str, sorted(ns))), []).append(attack)
    sizes = [f"n = {usual} images per point"]
    sizes += [f"{', '.join(attacks)}: n = {n}" for n, attacks in exceptions.items()]
    seeds = sorted({s.seed for s in series if s.seed is not None})
    return "; ".join(sizes) + (f"\n{seeds_note(seeds)}" if seeds else "")


def seeds_note(seeds: Sequence[int]) -> str:
    """`seeds 0, 1, one run per model`."""
    word = "seed" if len(seeds) == 1 else "seeds"
    return f"{word} {', '.join(map(str, seeds))}, one run per model"


def _dodged(series: Sequence[AccuracySeries], step: float) -> dict[tuple[str, str], float]:
    """x of each single-budget series: markers at the same eps are set side by side."""
    at: dict[float, list[tuple[str, str]]] = {}
    for s in series:
        at.setdefault(s.points[0].eps, []).append((s.model, s.attack))
    return {
        key: eps + (i - (len(keys) - 1) / 2) * step
        for eps, keys in at.items()
        for i, key in enumerate(keys)
    }


def percent_axes(fig: Figure, ax: Axes, xlabel: str, ylabel: str, title: str, note: str) -> None:
    """`ax` from 0 to 100 % with labels and a grid, `title` over the figure, `note` under it."""
    ax.set(ylim=(0, 100), xlabel=xlabel, ylabel=ylabel)
    ax.grid(True, alpha=0.3)
    _titles(fig, ax, title, note, width=None)


def step_with_band(ax: Axes, curve: Any, colour: Any, linestyle: str) -> Artist:
    """A curve's fractions (`x`, `value`, `low`, `high`) as a % step line over its 95% band."""
    values = [100 * v for v in curve.value]
    low, high = [100 * v for v in curve.low], [100 * v for v in curve.high]
    ax.fill_between(curve.x, low, high, step="post", color=colour, alpha=0.15, lw=0)
    (line,) = ax.step(curve.x, values, where="post", color=colour, linestyle=linestyle)
    return line


def legend_beside(ax: Axes, entries: Sequence[tuple[Artist, str]], **style: Any) -> Legend:
    """A legend of (handle, text) entries right of the axes, clear of the data (constrained
    layout makes room for it); `style` may move it (`bbox_to_anchor`)."""
    placed: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0)}
    handles, texts = [h for h, _ in entries], [t for _, t in entries]
    return ax.legend(
        handles, texts, borderaxespad=0.0, fontsize=8, frameon=False, **(placed | style)
    )


def _accuracy_legend(
    ax: Axes,
    colours: Mapping[str, str],
    styles: Mapping[str, tuple[LineStyle, str]],
    sweeps: set[str],
) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def header(text: str) -> tuple[Any, str]:
        return Line2D([], [], linestyle="none"), text

    entries = [header("model")]
    entries += [(Line2D([], [], color=c, linewidth=2.5), m) for m, c in colours.items()]
    entries.append(header("attack"))
    for attack, (linestyle, marker) in styles.items():
        shown: LineStyle = linestyle if attack in sweeps else "none"
        handle = Line2D([], [], color="0.3", linestyle=shown, marker=marker)
        entries.append((handle, attack))
    entries.append(header("uncertainty"))
    what = "95% CI: band (lines),\nbar (markers)" if sweeps else "95% CI: error bars"
    entries.append((Patch(facecolor="0.5", alpha=0.3), what))
    legend = legend_beside(ax, entries, handlelength=2.6)
    headers = {"model", "attack", "uncertainty"}
    for text in legend.get_texts():
        if text.get_text() in headers:
            text.set_fontweight("bold")


def accuracy_vs_eps_figure(
    series: Sequence[AccuracySeries],
    *,
    title: str = "Accuracy under attack",
    note: str | None = None,
    ylabel: str = "top-1 accuracy (%)",
) -> Figure:
    """Accuracy (%) of `series` (from `accuracy_series`) against the L-inf budget, with 95%
    intervals: one colour per model, one line style and marker per attack; several budgets
    are a line from the clean point with a band, one budget a marker with an error bar. The
    note under the title gives the images and seeds, then `note`.
    """
    _check_series({f"{s.model}: {s.attack}": s.points for s in series}, "plot_accuracy_vs_eps")
    models = list(dict.fromkeys(s.model for s in series))
    colours = dict(zip(models, _colours(len(models)), strict=True))
    styles = _attack_styles(series)
    xmax = max(p.eps for s in series for p in s.points) or 1.0
    singles = [s for s in series if not s.is_sweep]
    x_of = _dodged(singles, step=0.03 * xmax)
    clean = {
        s.model: (x_of[(s.model, s.attack)], s.points[0]) for s in singles if s.kind == "clean"
    }
    fig = new_figure(7.6, 4.6)
    ax = fig.add_subplot()
    for s in series:
        colour, (linestyle, marker) = colours[s.model], styles[s.attack]
        label = f"{s.model}: {s.attack}"
        if not s.is_sweep:
            p = s.points[0]
            ax.errorbar(
                [x_of[(s.model, s.attack)]],
                [p.percent],
                yerr=[[p.percent - p.ci95[0]], [p.ci95[1] - p.percent]],
                linestyle="none",
                marker=marker,
                markersize=10 if marker == "*" else 6,
                capsize=3,
                color=colour,
                label=label,
            )
            continue
        xs, points = [p.eps for p in s.points], list(s.points)
        anchor = clean.get(s.model)
        if anchor is not None and points[0].eps > 0:  # the line starts at the clean accuracy
            xs, points = [anchor[0], *xs], [anchor[1], *points]
        first = len(points) - len(s.points)
        low, high = [p.ci95[0] for p in points], [p.ci95[1] for p in points]
        ax.fill_between(xs, low, high, color=colour, alpha=0.12, linewidth=0)
        ax.plot(
            xs,
            [p.percent for p in points],
            linestyle=linestyle,
            marker=marker,
            markevery=list(range(first, len(points))),
            color=colour,
            label=label,
        )
    ticks = sorted({p.eps for s in series for p in s.points})
    ax.set_xticks(ticks, [display_pixel_value(e) for e in ticks])
    xs = [0.0, xmax, *x_of.values()]  # dodged markers stay inside the axes
    ax.set_xlim(min(xs) - 0.04 * xmax, max(xs) + 0.04 * xmax)
    xlabel = "attack budget ε (L∞, pixel scale: 1/255 = one grey level)"
    notes = "\n".join(filter(None, [_sample_note(series), note]))
    percent_axes(fig, ax, xlabel, ylabel, title, wrapped(notes, 76))
    _accuracy_legend(ax, colours, styles, {s.attack for s in series if s.is_sweep})
    return fig


def plot_accuracy_vs_eps(
    series: Sequence[AccuracySeries], path: Path | str, **options: Any
) -> Path:
    """`accuracy_vs_eps_figure(series, **options)` written to `path` as PNG."""
    return save_figure(accuracy_vs_eps_figure(series, **options), path)
