"""The page's figures, drawn with robench's own plotting code and inlined as base64 PNG: each
builder in `FIGURES` returns those that apply, none when the reports have nothing for it
(docs/formats.md, "HTML page", lists them).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from robench.results.plots.certified import certified_figure
from robench.results.plots.corruptions import corruption_heatmap_figure
from robench.results.plots.curves import curve_norms, eps_curve_figure, iteration_figure
from robench.results.plots.figures import (
    DPI,
    MODEL_COLOURS,
    PNG_METADATA,
    accuracy_series,
    accuracy_vs_eps_figure,
    new_figure,
)
from robench.results.plots.reliability import reliability_figure
from robench.results.report.schema import PerturbationResult, Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Pixels per inch of the inlined PNGs: sharp on high-density screens and in print; the page
# shows them at matplotlib's DPI, so text keeps its intended size.
PAGE_DPI = 2 * DPI
# How a threat model (`params["norm"]`, lower case) is named in titles and axes.
NORM_NAMES = {"linf": "L∞", "l2": "L2", "l1": "L1"}
LANGUAGE_MODELING = "language-modeling"
SEGMENTATION = "semantic-segmentation"
WORD_SWAP = "word-swap"
MINIMAL_NORM = "minimal-norm"  # drawn as a curve (curve_figures), not as a point at its cap


@dataclass(frozen=True)
class PageFigure:
    title: str  # the figure's heading on the page
    alt: str  # what the figure shows, for screen readers and when images are off
    data_uri: str  # data:image/png;base64,...
    width: int  # CSS pixels the figure is shown at
    height: int


def inline_png(fig: Figure, title: str, alt: str) -> PageFigure:
    """`fig` as a base64 PNG data URI, without version metadata (same data, same bytes)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=PAGE_DPI, metadata=PNG_METADATA)
    width, height = fig.get_size_inches() * DPI
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return PageFigure(title, alt, f"data:image/png;base64,{encoded}", round(width), round(height))


def _inlined(fig: Figure | None, title: str, alt: str) -> list[PageFigure]:
    """`inline_png(fig, title, alt)`, if there is a figure."""
    return [] if fig is None else [inline_png(fig, title, alt)]


def _norm(params: Mapping[str, object]) -> str | None:
    """The threat model of a bounded result (`eps` given; L-inf unless it says), else None."""
    if "eps" not in params:
        return None
    return str(params.get("norm", "linf")).lower()


def _listing(names: list[str]) -> str:
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]


def _heatmap_alt(names: list[str], what: str, darker: str) -> str:
    return (
        f"Heatmaps, one per model ({_listing(names)}): {what} in percent for each corruption "
        f"(rows) and severity (columns), printed in every cell; darker is {darker}."
    )


def _on_budget_axis(result: PerturbationResult, norm: str) -> bool:
    """Clean, or a fixed-budget result under `norm` (minimal norms are curves elsewhere)."""
    return result.kind == "clean" or (_norm(result.params) == norm and result.kind != MINIMAL_NORM)


def budget_figures(reports: Mapping[str, Report]) -> list[PageFigure]:
    """Top-1 accuracy against the budget, one figure per threat model with attacks."""
    norms = dict.fromkeys(n for r in reports.values() for x in r.results if (n := _norm(x.params)))
    figures = []
    for norm in norms:
        kept = {
            label: r.model_copy(
                update={"results": [x for x in r.results if _on_budget_axis(x, norm)]}
            )
            for label, r in reports.items()
        }
        series = accuracy_series(kept)
        if not any(s.kind != "clean" for s in series):
            continue
        name = NORM_NAMES.get(norm, norm)
        fig = accuracy_vs_eps_figure(series, title=f"Top-1 accuracy under {name} attacks")
        if norm != "linf":  # the plot's axis names L-inf pixel units
            fig.axes[0].set_xlabel(f"attack budget ε ({name} norm)")
        attacks = list(dict.fromkeys(s.attack for s in series if s.kind != "clean"))
        alt = (
            f"Line chart: top-1 accuracy in percent against the {name} attack budget for "
            f"{_listing(list(reports))}, under {_listing(attacks)}, starting from clean "
            "accuracy, with shaded 95% intervals; the numbers are in the leaderboard."
        )
        figures.append(inline_png(fig, f"Accuracy against the {name} budget", alt))
    return figures


def curve_figures(reports: Mapping[str, Report]) -> list[PageFigure]:
    """Accuracy against eps from minimal norms (one figure per threat model), certified
    accuracy against the radius, and accuracy against attack iterations."""
    figures = []
    for norm in curve_norms(reports):
        name = NORM_NAMES.get(norm, norm)
        alt = (
            f"Step chart: top-1 accuracy in percent against the {name} budget from each "
            f"sample's minimal adversarial norm, for {_listing(list(reports))}, with shaded "
            "pointwise 95% intervals, and the fixed-budget PGD results as markers with error bars."
        )
        title = f"Accuracy against the {name} budget, minimal norms"
        figures += _inlined(eps_curve_figure(reports, norm), title, alt)
    alt = (
        "Step chart: certified accuracy in percent (randomized smoothing) against the L2 "
        f"radius for {_listing(list(reports))}, with shaded pointwise 95% intervals."
    )
    figures += _inlined(certified_figure(reports), "Certified accuracy against the L2 radius", alt)
    alt = (
        "Line chart: top-1 accuracy in percent (best iterate so far) against the attack's "
        f"iterations for {_listing(list(reports))}, one line per iterative attack, with "
        "shaded 95% intervals; the last 20% of each line is drawn thicker."
    )
    return figures + _inlined(iteration_figure(reports), "Accuracy against attack iterations", alt)


def heatmap_figures(reports: Mapping[str, Report]) -> list[PageFigure]:
    """Accuracy per corruption and severity, one panel per model."""
    fig = corruption_heatmap_figure(reports)
    if fig is None:
        return []
    alt = _heatmap_alt(list(reports), "top-1 accuracy", "lower accuracy")
    figures = [inline_png(fig, "Accuracy per corruption and severity", alt)]
    ece = corruption_heatmap_figure(reports, metric="ece")
    alt = _heatmap_alt(list(reports), "expected calibration error", "a larger calibration error")
    return figures + _inlined(ece, "Calibration error (ECE) per corruption and severity", alt)


def reliability_figures(reports: Mapping[str, Report]) -> list[PageFigure]:
    """Reliability diagrams, one panel per perturbation, one line per model."""
    alt = (
        "Reliability diagrams, one panel per perturbation (corruptions pooled per severity): "
        f"accuracy against confidence in 15 bins for {_listing(list(reports))}, with the "
        "diagonal of perfect calibration; each panel's title gives each model's ECE in percent."
    )
    return _inlined(reliability_figure(reports), "Reliability per perturbation", alt)


def _perplexities(report: Report) -> list[tuple[str, float, tuple[float, float]]]:
    """(result name, perplexity, 95% interval) of the clean and Word Swap results."""
    return [
        (x.name, x.metrics["perplexity"].value, x.metrics["perplexity"].ci95)
        for x in report.results
        if x.kind in ("clean", WORD_SWAP) and "perplexity" in x.metrics
    ]


def perplexity_figures(reports: Mapping[str, Report]) -> list[PageFigure]:
    """Language models: perplexity clean and under each Word Swap rate, bars per model."""
    models = [(label, r) for label, r in reports.items() if r.task == LANGUAGE_MODELING]
    found = {label: values for label, r in models if (values := _perplexities(r))}
    names = list(dict.fromkeys(name for values in found.values() for name, _, _ in values))
    if not found or not any(name != "clean" for name in names):
        return []
    fig = new_figure(7.6, 3.8)
    ax = fig.add_subplot()
    width = 0.8 / len(found)
    for i, (label, values) in enumerate(found.items()):
        colour = MODEL_COLOURS[i % len(MODEL_COLOURS)]
        xs = [names.index(name) + (i - (len(found) - 1) / 2) * width for name, _, _ in values]
        ys = [value for _, value, _ in values]
        errors = [[v - ci[0] for _, v, ci in values], [ci[1] - v for _, v, ci in values]]
        ax.bar(xs, ys, width * 0.9, color=colour, label=label, alpha=0.85)
        ax.errorbar(xs, ys, yerr=errors, linestyle="none", color="0.2", capsize=3)
        for x, y in zip(xs, ys, strict=True):
            ax.annotate(f"{y:.1f}", (x, y), ha="center", va="bottom", fontsize=8,
                        xytext=(0, 2), textcoords="offset points")  # fmt: skip
    ax.set_xticks(range(len(names)), names)
    ax.set(ylabel="perplexity (lower is better)", ylim=(0, None))
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, fontsize=8)
    fig.suptitle("Perplexity, clean and under Word Swap", fontsize=11)
    ax.set_title("bars: perplexity; whiskers: 95% interval", fontsize=8, loc="left", color="0.25")
    alt = (
        f"Bar chart: perplexity of {_listing(list(found))} on clean text and under "
        f"{_listing([n for n in names if n != 'clean'])}, with 95% intervals; lower is better."
    )
    return [inline_png(fig, "Perplexity, clean vs Word Swap", alt)]


def segmentation_figures(reports: Mapping[str, Report]) -> list[PageFigure]:
    """Segmentation models: mIoU against the L-inf budget, and per corruption x severity."""
    found = {label: r for label, r in reports.items() if r.task == SEGMENTATION}
    if not found:
        return []
    figures = []
    series = [s for s in accuracy_series(found, metric="miou") if s.points]
    if any(s.kind != "clean" for s in series):
        fig = accuracy_vs_eps_figure(series, title="mIoU under L∞ attacks", ylabel="mIoU (%)")
        alt = (
            f"Line chart: mIoU in percent against the attack budget for {_listing(list(found))}"
            ", starting from clean mIoU, with shaded 95% intervals; the numbers are in the "
            "leaderboard."
        )
        figures.append(inline_png(fig, "mIoU against the L∞ budget", alt))
    heatmap = corruption_heatmap_figure(found, metric="miou", title="mIoU under corruptions")
    alt = _heatmap_alt(list(found), "mIoU", "lower")
    return figures + _inlined(heatmap, "mIoU per corruption and severity", alt)


# The page's figure builders, in page order.
FIGURES: tuple[Callable[[Mapping[str, Report]], list[PageFigure]], ...] = (
    budget_figures,
    curve_figures,
    heatmap_figures,
    reliability_figures,
    perplexity_figures,
    segmentation_figures,
)


def section_figures(reports: Mapping[str, Report]) -> list[PageFigure]:
    """Every figure that applies to the reports (row label -> report), in page order."""
    return [figure for build in FIGURES for figure in build(reports)]
