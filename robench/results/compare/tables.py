"""Human-readable tables of one report, in the shape of lm-eval's `make_table`:
`Perturbation | Metric | dir | Value | 95% CI`, values as the metric registry shows them; rich
tables that never cut a number, laid out to fit as `compare/formats.py` lays out its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from rich.cells import cell_len, chop_cells
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table

from robench.results.report.fitting import Layout as Layout
from robench.results.report.fitting import first_that_fits as first_that_fits
from robench.results.report.output_formats import REPORT_FORMATS as REPORT_FORMATS
from robench.results.report.output_formats import register_format
from robench.results.report.schema import Report
from robench.results.stats.metrics import higher_is_better, metric_display

ARROWS = {True: "↑", False: "↓"}

_BREAK = re.compile(r"(?<=[-_])")  # a word too long for its column breaks after '-' or '_'


def _pieces(word: str) -> list[str]:
    """`autoattack-lite-2` -> `autoattack-`, `lite-`, `2`: where a long word may break."""
    return [piece for piece in _BREAK.split(word) if piece]


def label_width(text: str, hyphenate: bool = False) -> int:
    """The narrowest width `wrap_label` shows `text` at without folding: its widest word (or
    with `hyphenate`, piece of a word)."""
    words = text.split()
    units = [piece for word in words for piece in _pieces(word)] if hyphenate else words
    return max((cell_len(unit) for unit in units), default=0)


def wrap_label(text: str, width: int) -> str:
    """`text` in lines of at most `width` cells: broken between words, a wider word after '-'
    or '_' (`vit_nano_` / `elliptical_` / `fmnist`), a wider piece folded."""
    lines: list[str] = []
    for source in text.split("\n"):
        line = ""
        for word in source.split():
            units = [word] if cell_len(word) <= width else _pieces(word)
            for i, unit in enumerate(units):
                joined = f"{line} {unit}" if line and i == 0 else line + unit
                if line and cell_len(joined) > width:
                    lines.append(line)
                    joined = unit
                line = joined
                if cell_len(line) > width:
                    *full, line = chop_cells(line, max(width, 1))
                    lines += full
        lines.append(line)
    return "\n".join(lines)


def numeric_width(cells: list[str], header: str = "", hyphenate: bool = False) -> int:
    """Width of a column of numbers: its widest line, or the header's `label_width`."""
    widest = max((cell_len(line) for cell in cells for line in cell.split("\n")), default=0)
    return max(widest, label_width(header, hyphenate))


def _value_unit(report: Report) -> str | None:
    """The unit every metric of `report` is shown in ("%" for accuracies, also when there
    is none); None when they differ, and each metric's row then names its own."""
    units = {metric_display(m).unit for r in report.results for m in r.metrics}
    return units.pop() if len(units) == 1 else ("%" if not units else None)


def budget_label(params: Mapping[str, Any]) -> str | None:
    """A result's eps as tables show it: `8/255`, or with the threat model the params name,
    `Linf 8/255`, `L2 0.5`; None for a result without an eps."""
    eps = params.get("eps_display")
    if not eps:
        return None
    norm = params.get("norm")
    return f"{str(norm).capitalize()} {eps}" if norm else str(eps)


def report_rows(report: Report) -> list[list[str]]:
    shared = _value_unit(report)
    rows = []
    for result in report.results:
        eps = budget_label(result.params)
        shown_params = [f"eps {eps}"] if eps else []
        surrogate = result.params.get("surrogate")  # a transfer attack's source model
        if isinstance(surrogate, Mapping) and surrogate.get("name"):
            shown_params.append(f"from {surrogate['name']}")
        label = f"{result.name} ({', '.join(shown_params)})" if shown_params else result.name
        for metric, value in result.metrics.items():
            display = metric_display(metric)
            scale, (low, high) = display.scale, value.ci95
            own_unit = shared is None and display.unit  # units differ: each row names its own
            rows.append(
                [
                    label,
                    f"{metric} ({display.unit})" if own_unit else metric,
                    ARROWS[higher_is_better(metric, value.higher_is_better)],
                    _number(scale * value.value),
                    f"[{_number(scale * low)}, {_number(scale * high)}]",
                    str(result.n_samples),
                ]
            )
    return rows


def _number(value: float) -> str:
    """Two decimals; "n/a" for a value with no samples to define it (NaN: an attack's
    perturbed-word share when no attack succeeded)."""
    return "n/a" if math.isnan(value) else f"{value:.2f}"


def value_header(report: Report) -> str:
    unit = _value_unit(report)
    return f"Value ({unit})" if unit else "Value"


def results_header(report: Report) -> list[str]:
    return ["Perturbation", "Metric", "", value_header(report), "95% CI", "n"]


SANITY_HEADER = ["Sanity check", "Status", "Detail"]
DIAGNOSTIC_HEADER = ["Diagnostic", "Values (scalars; per-layer lists in the report)"]


def _scalars(values: Mapping[str, Any]) -> list[str]:
    return [f"{k} {v:.4g}" for k, v in values.items() if isinstance(v, int | float)]


def diagnostic_rows(report: Report) -> list[list[str]]:
    return [[d.name, ", ".join(_scalars(d.values)) or "-"] for d in report.diagnostics]


def diagnostic_lines(report: Report) -> list[list[str]]:
    """A row per scalar, the diagnostic named on its first (a markdown table cannot wrap)."""
    rows = []
    for d in report.diagnostics:
        scalars = _scalars(d.values) or ["-"]
        rows += [[d.name if i == 0 else "", text] for i, text in enumerate(scalars)]
    return rows


def sanity_rows(report: Report) -> list[list[str]]:
    return [[s.name, s.status, s.detail] for s in report.sanity]


def _add_numeric_column(table: Table, header: str, cells: list[str], spare: int = 0) -> int:
    """A right-aligned column as wide as its widest number (it folds, never cuts), widened
    from `spare` to keep the header's lines whole; returns the spare width left."""
    width = numeric_width(cells, header)
    grow = min(spare, max(0, max(cell_len(line) for line in header.split("\n")) - width))
    table.add_column(
        wrap_label(header, width + grow), justify="right", width=width + grow, overflow="fold"
    )
    return spare - grow


class RichResults:
    """The results table of one report, laid out for the width it is printed at: `wide`, or
    `stacked` (the metric under the perturbation, the interval under the value)."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.rows = report_rows(report)
        self.header = results_header(report)

    def _table(self) -> Table:
        report = self.report
        title = f"{report.model.name} · {report.suite.name} v{report.suite.version}"
        return Table(title=title, title_justify="left")

    def wide(self, spare: int = 0) -> Table:
        table = self._table()
        for i, name in enumerate(self.header[:3]):
            table.add_column(name, overflow="fold", no_wrap=i == 2)
        for i, name in enumerate(self.header[3:], start=3):
            spare = _add_numeric_column(table, name, [row[i] for row in self.rows], spare)
        for row in self.rows:
            table.add_row(*row)
        return table

    def stacked(self, spare: int = 0) -> Table:
        table = self._table()
        table.add_column("Perturbation\nMetric", overflow="fold")
        values = [f"{value}\n{interval}" for _, _, _, value, interval, _ in self.rows]
        spare = _add_numeric_column(table, f"{self.header[3]}\n95% CI", values, spare)
        _add_numeric_column(table, self.header[5], [row[5] for row in self.rows], spare)
        for (label, metric, arrow, *_, n), value in zip(self.rows, values, strict=True):
            table.add_row(f"{label}\n{metric} {arrow}", value, n)
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        layouts: dict[str, Layout] = {"wide": self.wide, "stacked": self.stacked}
        yield first_that_fits(console, options, layouts)[1]


@register_format("report", "rich")
def rich_table(report: Report) -> RenderableType:
    parts: list[RenderableType] = [RichResults(report)]
    if report.diagnostics:
        parts.append(_text_table("Diagnostics", DIAGNOSTIC_HEADER, diagnostic_rows(report)))
    if report.sanity:
        styled = {"pass": "[green]pass[/]", "warn": "[yellow]warn[/]"}
        rows = [[n, styled.get(s, styled["warn"]), d] for n, s, d in sanity_rows(report)]
        parts.append(_text_table("Sanity battery", SANITY_HEADER, rows))
    return parts[0] if len(parts) == 1 else Group(*parts)


def _text_table(title: str, header: list[str], rows: list[list[str]]) -> Table:
    """A table of text columns that fold (the status column never wraps)."""
    table = Table(title=title, title_justify="left")
    for name in header:
        table.add_column(name, overflow="fold", no_wrap=name == "Status")
    for row in rows:
        table.add_row(*row)
    return table


def markdown_lines(header: list[str], rows: Iterable[list[str]], right: int = 0) -> list[str]:
    """A markdown table's lines, its last `right` columns right-aligned (numbers)."""
    rule = "|" + "---|" * (len(header) - right) + "---:|" * right
    return ["| " + " | ".join(header) + " |", rule, *("| " + " | ".join(r) + " |" for r in rows)]


@register_format("report", "markdown")
def markdown_fitting(report: Report, width: int | None = None) -> str:
    """The report's markdown tables; with `width`, the results narrower (the direction beside
    the metric, the interval beside the value) where they are wider: `robench eval` on a pipe."""
    lines = markdown_lines(results_header(report), report_rows(report))
    if width is not None and max(cell_len(line) for line in lines) > width:
        header = ["Perturbation", "Metric", f"{value_header(report)} [95% CI]", "n"]
        rows = [[p, f"{m} {a}", f"{v} {ci}", n] for p, m, a, v, ci, n in report_rows(report)]
        lines = markdown_lines(header, rows)
    if report.diagnostics:
        lines += ["", *markdown_lines(DIAGNOSTIC_HEADER, diagnostic_lines(report))]
    if report.sanity:
        lines += ["", *markdown_lines(SANITY_HEADER, sanity_rows(report))]
    return "\n".join(lines)


@register_format("report", "json")
def json_report(report: Report) -> str:
    return report.model_dump_json(indent=2)
