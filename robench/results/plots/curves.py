"""Figures of the curves attacks record (results/stats/robustness_curves.py): accuracy
against eps from minimal norms, and against the attack's iterations (docs/architecture.md,
"Figures").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from robench._core.units import display_pixel_value
from robench.results.plots.figures import (
    LINE_STYLES,
    MODEL_COLOURS,
    legend_beside,
    new_figure,
    percent_axes,
    step_with_band,
)
from robench.results.report.attack_names import attack_name
from robench.results.stats.robustness_curves import (
    STILL_FALLING_SHARE,
    eps_curve,
    is_minimal_norm,
    iteration_curve,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from robench.results.report.schema import PerturbationResult, Report

NORM_AXES = {
    "linf": "L∞, pixel scale: 1/255 = one grey level",
    "l2": "L2, pixel scale",
    "l1": "L1, pixel scale",
    "l0": "L0, changed pixels",
}


def _norm(result: PerturbationResult) -> str:
    return str(result.params.get("norm", "linf")).lower()


def curve_norms(reports: Mapping[str, Report]) -> list[str]:
    """The threat models of the reports' minimal-norm results, in order of appearance."""
    found = (_norm(x) for r in reports.values() for x in r.results if is_minimal_norm(x))
    return list(dict.fromkeys(found))


def _eps_label(eps: float, norm: str) -> str:
    return display_pixel_value(eps) if norm == "linf" else f"{eps:.3g}"


def eps_curve_figure(reports: Mapping[str, Report], norm: str) -> Figure | None:
    """Accuracy against eps for the `norm` minimal-norm results, with the PGD points; None
    when no report has a minimal-norm result under `norm`."""
    fig = new_figure(7.6, 4.6)
    ax = fig.add_subplot()
    entries: list[tuple[Any, str]] = []
    ticks: set[float] = {0.0}
    drawn = False
    for i, (label, report) in enumerate(reports.items()):
        colour = MODEL_COLOURS[i % len(MODEL_COLOURS)]
        curves = [x for x in report.results if is_minimal_norm(x) and _norm(x) == norm]
        for j, result in enumerate(curves):
            curve = eps_curve(report, result, where=f"the report of {label}")
            if curve.n == 0:
                continue
            drawn = True
            line = step_with_band(ax, curve, colour, LINE_STYLES[j % len(LINE_STYLES)])
            name = attack_name(result.kind, result.params)
            entries.append((line, f"{label}: {result.name} ({name}, n={curve.n})"))
            ticks.add(float(result.params.get("eps", curve.x[-1])))  # no eps: uncapped
        for result in report.results:
            if result.kind != "pgd" or _norm(result) != norm or "top1" not in result.metrics:
                continue
            metric, eps = result.metrics["top1"], float(result.params["eps"])
            value = 100 * metric.value
            bar = ax.errorbar([eps], [value], capsize=4, marker="o", linestyle="none",
                              color=colour, markerfacecolor="white",
                              yerr=[[value - 100 * metric.ci95[0]],
                                    [100 * metric.ci95[1] - value]])  # fmt: skip
            entries.append((bar, f"{label}: {result.name} (fixed eps, n={result.n_samples})"))
            ticks.add(eps)
    if not drawn:
        return None
    shown = sorted(ticks)
    ax.set_xticks(shown, [_eps_label(e, norm) for e in shown])
    ax.set_xlim(0, max(shown) * 1.02 or 1.0)
    percent_axes(
        fig,
        ax,
        f"attack budget ε ({NORM_AXES.get(norm, norm)})",
        "top-1 accuracy (%)",
        "Accuracy against ε from minimal norms",
        "lines: robust when the sample's minimal norm > ε; bands and bars: Wilson 95% "
        "intervals;\nmarkers: fixed-ε PGD runs on the same samples",
    )
    legend_beside(ax, entries)
    return fig


def iteration_figure(reports: Mapping[str, Report]) -> Figure | None:
    """Accuracy against iterations for every result that recorded them; None when none did."""
    fig = new_figure(7.6, 4.6)
    ax = fig.add_subplot()
    entries = []
    longest = 0
    for i, (label, report) in enumerate(reports.items()):
        colour = MODEL_COLOURS[i % len(MODEL_COLOURS)]
        j = 0
        for result in report.results:
            curve = iteration_curve(report, result)
            if curve is None or curve.n == 0:
                continue
            style = LINE_STYLES[j % len(LINE_STYLES)]
            j += 1
            values = [100 * v for v in curve.value]
            low, high = [100 * v for v in curve.low], [100 * v for v in curve.high]
            ax.fill_between(curve.x, low, high, color=colour, alpha=0.1, lw=0)
            (line,) = ax.plot(curve.x, values, color=colour, linestyle=style)
            start = math.floor((1 - STILL_FALLING_SHARE) * (len(curve.x) - 1))
            ax.plot(curve.x[start:], values[start:], color=colour, linestyle=style, lw=3)
            name = attack_name(result.kind, result.params)
            eps = _eps_label(float(result.params["eps"]), _norm(result))
            entries.append((line, f"{label}: {result.name} ({name}, ε {eps}, n={curve.n})"))
            longest = max(longest, len(curve.x) - 1)
    if not entries:
        return None
    ax.set_xlim(0, longest)
    percent_axes(
        fig,
        ax,
        "attack iteration (0 = start)",
        "top-1 accuracy (%), best iterate so far",
        "Accuracy against attack iterations",
        f"thick: the last {100 * STILL_FALLING_SHARE:g}% of the iterations, where a falling "
        "curve means the attack had not converged;\nbands: Wilson 95% intervals",
    )
    # Below the axes, not beside them: its entries name model, result, attack, eps and n,
    # and beside the axes they took two thirds of the figure's width.
    fig.set_figheight(4.6 + 0.18 * len(entries))
    legend_beside(ax, entries, bbox_to_anchor=(0.0, -0.14))
    return fig
