"""The certified-accuracy figure (results/stats/certified_curves.py), on an Agg canvas like
every robench figure: certified accuracy (%) against the L2 radius, a step curve per
randomized-smoothing result with its pointwise Wilson 95% band; the suite's radii are ticks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from robench.results.plots.figures import (
    LINE_STYLES,
    MODEL_COLOURS,
    figure_legend,
    new_figure,
    percent_axes,
    step_with_band,
)
from robench.results.stats.certified_curves import certified_curve, is_certified, listed_radii

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from robench.results.report.schema import Report


def certified_figure(reports: Mapping[str, Report]) -> Figure | None:
    """Certified accuracy against the radius; None when no report has a certificate."""
    fig = new_figure(7.6, 5.0)
    ax = fig.add_subplot()
    entries: list[tuple[Any, str]] = []
    ticks: set[float] = {0.0}
    right = 0.0
    for i, (label, report) in enumerate(reports.items()):
        colour = MODEL_COLOURS[i % len(MODEL_COLOURS)]
        for j, result in enumerate(filter(is_certified, report.results)):
            curve = certified_curve(report, result, where=f"the report of {label}")
            if curve is None or curve.n == 0:
                continue
            line = step_with_band(ax, curve, colour, LINE_STYLES[j % len(LINE_STYLES)])
            sigma = result.params.get("sigma")
            entries.append((line, f"{label}: {result.name} (σ {sigma}, n={curve.n})"))
            ticks |= set(listed_radii(result))
            right = max(right, curve.x[-1])
    if not entries:
        return None
    shown = sorted(t for t in ticks if t <= right)
    ax.set_xticks(shown, [f"{t:g}" for t in shown])
    ax.set_xlim(0, right)
    percent_axes(
        fig,
        ax,
        "L2 radius (pixel scale)",
        "certified accuracy (%)",
        "Certified accuracy against the L2 radius (randomized smoothing)",
        "certified at r: the smoothed classifier is right and its radius > r (Cohen et al. "
        "2019);\nbands: Wilson 95% intervals over samples",
    )
    # Below the axes, one entry per line: the labels (model, result, sigma, n) are long, and
    # beside the axes they squeezed the curves into a third of the width.
    figure_legend(fig, entries, loc="outside lower center", ncols=1)
    return fig
