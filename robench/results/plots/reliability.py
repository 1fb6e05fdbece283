"""Reliability diagrams (Guo et al., ICML 2017, Fig. 1; Ovadia et al., NeurIPS 2019): per
perturbation, the accuracy of the samples in each confidence bin against their mean
confidence, read off the reports' per-sample `ece` column ([confidence, correct]).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from robench.results.plots.figures import MODEL_COLOURS, NOTE_SIZE, figure_legend, new_figure
from robench.results.stats.calibration import ECE_BINS, CalibrationError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from robench.results.report.schema import PerturbationResult, Report


MAX_PANELS = 24  # more are left out, and the figure says so
_ECE = CalibrationError()


@dataclass
class ReliabilityPanel:
    """One perturbation (or one severity of pooled corruptions): each model's pairs."""

    name: str  # panel title: the result's name, or "corruptions, severity 3"
    pairs: dict[str, list[list[float]]] = field(default_factory=dict)  # model -> [conf, correct]
    results: set[str] = field(default_factory=set)  # names of the results pooled into it

    @property
    def members(self) -> int:
        return len(self.results)

    def bins(self, model: str) -> list[tuple[float, float, int]]:
        """(mean confidence, accuracy, count) of each non-empty bin of `model`."""
        sums: dict[int, list[float]] = {}
        for confidence, correct in self.pairs[model]:
            b = min(int(confidence * ECE_BINS), ECE_BINS - 1) if math.isfinite(confidence) else 0
            acc = sums.setdefault(b, [0.0, 0.0, 0.0])
            acc[0], acc[1], acc[2] = acc[0] + confidence, acc[1] + correct, acc[2] + 1
        return [(s[0] / s[2], s[1] / s[2], int(s[2])) for _, s in sorted(sums.items())]


def _panel_key(result: PerturbationResult) -> tuple[str, int]:
    # Corruptions pooled per severity: 75 ImageNet-C results would be 75 panels, and the
    # shift's strength is the axis a diagram under shift is read along (Ovadia et al.).
    severity = result.params.get("severity")
    if result.kind == "corruption" and isinstance(severity, int):
        return f"corruptions, severity {severity}", severity
    return result.name, 0


def reliability_panels(reports: Mapping[str, Report]) -> list[ReliabilityPanel]:
    """The panels of `reports` (model name -> report), in first-seen order; results without
    per-sample ECE values are left out."""
    panels: dict[str, ReliabilityPanel] = {}
    for model, report in reports.items():
        for result in report.results:
            pairs = report.sample_values(result.name, "ece")
            if not pairs or "ece" not in result.metrics:
                continue
            name, _ = _panel_key(result)
            panel = panels.setdefault(name, ReliabilityPanel(name))
            panel.results.add(result.name)
            panel.pairs.setdefault(model, []).extend(pairs)
    return list(panels.values())


def _draw_panel(ax: Axes, panel: ReliabilityPanel, colours: Mapping[str, str]) -> None:
    ax.plot([0, 1], [0, 1], linestyle="--", color="0.55", linewidth=0.9)
    eces = []
    for model, colour in colours.items():
        if model not in panel.pairs:
            continue
        bins = panel.bins(model)
        total = sum(count for _, _, count in bins)
        xs, ys = [b[0] for b in bins], [b[1] for b in bins]
        ax.plot(xs, ys, color=colour, linewidth=1.3)
        ax.scatter(xs, ys, s=[6 + 120 * c / total for *_, c in bins], color=colour, zorder=3)
        eces.append(f"{100 * _ECE(panel.pairs[model]):.1f}")
    ax.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", xticks=[0, 0.5, 1], yticks=[0, 0.5, 1])
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.25)
    pooled = f" ({panel.members} pooled)" if panel.members > 1 else ""
    ax.set_title(f"{panel.name}{pooled}\nECE % {' / '.join(eces)}", fontsize=8)


def reliability_figure(
    reports: Mapping[str, Report], *, title: str = "Reliability per perturbation"
) -> Figure | None:
    """Small multiples of the panels of `reports`; None without per-sample ECE values."""
    panels = reliability_panels(reports)
    if not panels:
        return None
    shown = panels[:MAX_PANELS]
    ncols = min(4, len(shown))
    nrows = math.ceil(len(shown) / ncols)
    fig = new_figure(2.3 * ncols + 1.6, 2.45 * nrows + 1.1)
    models = list(dict.fromkeys(m for p in shown for m in p.pairs))
    colours = {m: MODEL_COLOURS[i % len(MODEL_COLOURS)] for i, m in enumerate(models)}
    fig.suptitle(title, fontsize=11)
    body = fig.subfigures(1, 1, squeeze=False)[0, 0]
    # About 15 characters of 8 pt text an inch; constrained layout keeps it clear of the axes.
    note = textwrap.fill(_note(shown, panels, models), int(15 * fig.get_figwidth()))
    body.suptitle(note, x=0.01, ha="left", fontsize=NOTE_SIZE, color="0.25")
    axes = body.subplots(nrows, ncols, squeeze=False)
    for k, panel in enumerate(shown):
        _draw_panel(axes[k // ncols][k % ncols], panel, colours)
    for ax in axes.flat[len(shown) :]:
        ax.remove()
    for ax in axes[:, 0]:
        ax.set_ylabel("accuracy", fontsize=8)
    for ax in axes[-1, :]:
        ax.set_xlabel("confidence", fontsize=8)
    figure_legend(fig, [(_line(colours[m]), m) for m in models], loc="outside right upper")
    return fig


def _line(colour: str) -> Line2D:
    from matplotlib.lines import Line2D

    return Line2D([], [], color=colour, marker="o", linewidth=1.3)


def _note(
    shown: Sequence[ReliabilityPanel], panels: Sequence[ReliabilityPanel], models: list[str]
) -> str:
    counts = sorted({len(p.pairs[m]) for p in shown for m in p.pairs if p.members == 1})
    parts = [
        f"{ECE_BINS} equal-width confidence bins; marker area: the bin's share of samples; "
        "dashed: perfect calibration",
        f"ECE % per model in each title ({' / '.join(models)})",
    ]
    if counts:
        parts.append(f"n = {counts[0]}" + (f" to {counts[-1]}" if len(counts) > 1 else ""))
    if len(panels) > len(shown):
        parts.append(f"{len(panels) - len(shown)} more perturbations not shown")
    return "; ".join(parts)
