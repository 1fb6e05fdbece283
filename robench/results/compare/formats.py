"""Output formats of `robench compare`: rich, markdown, csv, latex, json and html renderings
of a `Comparison`, registered in `COMPARE_FORMATS` (import it from here, where it is filled)
with the file suffixes that select them (best bold, second underlined where the format can).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markup import escape as rich_escape
from rich.table import Table
from rich.text import Text

from robench.results.compare.comparison import ARROWS, Cell, Column, Comparison
from robench.results.compare.cost_column import UNKNOWN
from robench.results.compare.tables import (
    Layout,
    first_that_fits,
    markdown_lines,
    numeric_width,
    wrap_label,
)
from robench.results.report.output_formats import COMPARE_FORMATS as COMPARE_FORMATS
from robench.results.report.output_formats import register_format
from robench.results.report.schema import read_report

if TYPE_CHECKING:
    from robench.results.gate.formats import GateSummary


@dataclass(frozen=True)
class Markup:
    """How one output format writes emphasis, escapes text and shows a direction."""

    bold: Callable[[str], str]
    underline: Callable[[str], str]
    escape: Callable[[str], str]
    arrows: dict[bool, str]


def _identity(text: str) -> str:
    return text


def unmarked(markup: Markup) -> Markup:
    """`markup` without emphasis: for a table of one model's values (no neighbour to beat)."""
    return replace(markup, bold=_identity, underline=_identity)


def marked(text: str, mark: str, markup: Markup) -> str:
    """`text` in bold when `mark` is "best", underlined when "second"."""
    emphasis = {"best": markup.bold, "second": markup.underline}.get(mark)
    return emphasis(text) if emphasis else text


def cell_text(
    cmp: Comparison, row: str, column: Column, markup: Markup, ci: bool, interval_sep: str = " "
) -> str:
    """`54.64 (+2.03) [53.66, 55.61]`: value (marked), difference to the reference, interval
    (after `interval_sep`)."""
    cell = cmp.cell(row, column)
    if math.isnan(cell.value):  # a cost an older report did not count
        return markup.escape(UNKNOWN)
    text = marked(f"{cell.value:.2f}", cell.mark, markup)
    if cell.diff is not None and row != cmp.reference:
        diff = round(cell.diff, 2) + 0.0  # + 0.0 turns -0.0 into 0.0
        text += f" ({diff:+.2f})"
    if ci:
        text += f"{interval_sep}[{cell.ci95[0]:.2f}, {cell.ci95[1]:.2f}]"
    return text


def _header(column: Column, markup: Markup, with_perturbation: bool = True) -> str:
    name = f"{column.perturbation} " if with_perturbation and not column.aggregate else ""
    text = markup.escape(name + column.metric_text(with_perturbation))
    return f"{text} {markup.arrows[column.higher_is_better]}"


def _row_label(cmp: Comparison, row: str, markup: Markup) -> str:
    return markup.escape(row + (" (ref)" if row == cmp.reference else ""))


# Renderers take the comparison and whether to show intervals; html also takes `gate`.

MARKDOWN = Markup(
    bold=lambda s: f"**{s}**",
    underline=lambda s: f"<u>{s}</u>",
    escape=lambda s: s.replace("|", r"\|"),
    arrows=ARROWS,
)


@register_format("compare", "markdown", ".md")
def markdown_comparison(cmp: Comparison, ci: bool) -> str:
    """A GitHub-flavoured markdown table (bold `**x**`, underline `<u>x</u>`)."""
    header = ["Model"] + [_header(c, MARKDOWN) for c in cmp.columns]
    rows = [
        [_row_label(cmp, r, MARKDOWN)] + [cell_text(cmp, r, c, MARKDOWN, ci) for c in cmp.columns]
        for r in cmp.rows
    ]
    return "\n".join(markdown_lines(header, rows, right=len(cmp.columns)))


def _markdown_models_as_columns(cmp: Comparison, ci: bool) -> str:
    """A row per perturbation and metric, a column per model."""
    header = ["Perturbation", "Metric"] + [_row_label(cmp, row, MARKDOWN) for row in cmp.rows]
    rows = [
        _markdown_labels(shown, c) + [cell_text(cmp, r, c, MARKDOWN, ci) for r in cmp.rows]
        for shown, c in zip(_perturbations(cmp.columns), cmp.columns, strict=True)
    ]
    return "\n".join(markdown_lines(header, rows, right=len(cmp.rows)))


def _markdown_labels(shown: str, column: Column) -> list[str]:
    return [MARKDOWN.escape(shown), _header(column, MARKDOWN, False)]


def _markdown_per_model(cmp: Comparison, ci: bool) -> str:
    """A table per model (its name above it), a row per perturbation and metric; unmarked."""
    blocks, plain = [], unmarked(MARKDOWN)
    for row in cmp.rows:
        rows = [
            [*_markdown_labels(shown, c), cell_text(cmp, row, c, plain, ci)]
            for shown, c in zip(_perturbations(cmp.columns), cmp.columns, strict=True)
        ]
        table = markdown_lines(["Perturbation", "Metric", "Value"], rows, right=1)
        blocks.append("\n".join([f"{_row_label(cmp, row, MARKDOWN)}:", "", *table]))
    return "\n\n".join(blocks)


MARKDOWN_LAYOUTS: dict[str, Callable[[Comparison, bool], str]] = {
    "wide": markdown_comparison,
    "models-as-columns": _markdown_models_as_columns,
    "per-model": _markdown_per_model,
}


def markdown_fitting(cmp: Comparison, ci: bool, width: int) -> str:
    """The markdown table in the first of `MARKDOWN_LAYOUTS` (widest first) whose lines all fit
    `width` characters, else the narrowest: what a pipe or a log gets (`-o` keeps `wide`)."""
    rendered = ""
    for layout in MARKDOWN_LAYOUTS.values():
        rendered = layout(cmp, ci)
        if max(cell_len(line) for line in rendered.splitlines()) <= width:
            break
    return rendered


# Character -> its LaTeX: a backslash before the specials, the rest spelt out.
_LATEX_ESCAPES = str.maketrans(
    {ch: "\\" + ch for ch in "&%$#_{}"}
    | {"\\": r"\textbackslash{}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
)

LATEX = Markup(
    bold=lambda s: rf"\textbf{{{s}}}",
    underline=lambda s: rf"\underline{{{s}}}",
    escape=lambda s: s.translate(_LATEX_ESCAPES),
    arrows={True: r"$\uparrow$", False: r"$\downarrow$"},
)


@register_format("compare", "latex", ".tex")
def latex_comparison(cmp: Comparison, ci: bool) -> str:
    """A booktabs `tabular`: perturbations over their metrics, `\\textbf` and `\\underline`."""
    top, rules, start = [""], [], 2
    for name, count in Counter(column.group for column in cmp.columns).items():
        top.append(rf"\multicolumn{{{count}}}{{c}}{{{LATEX.escape(name)}}}")
        rules.append(rf"\cmidrule(lr){{{start}-{start + count - 1}}}")
        start += count
    second = ["Model"] + [_header(c, LATEX, with_perturbation=False) for c in cmp.columns]
    lines = [
        r"\begin{tabular}{l" + "r" * len(cmp.columns) + "}",
        r"\toprule",
        " & ".join(top) + r" \\",
        " ".join(rules),
        " & ".join(second) + r" \\",
        r"\midrule",
    ]
    for row in cmp.rows:
        cells = [cell_text(cmp, row, c, LATEX, ci) for c in cmp.columns]
        lines.append(" & ".join([_row_label(cmp, row, LATEX), *cells]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


RICH = Markup(
    bold=lambda s: f"[bold]{s}[/bold]",
    underline=lambda s: f"[underline]{s}[/underline]",
    escape=rich_escape,
    arrows=ARROWS,
)
PLAIN = Markup(bold=_identity, underline=_identity, escape=_identity, arrows=ARROWS)


def _label_column(table: Table, header: str, labels: list[str]) -> None:
    """A column of labels as wide as the widest (labels and header are plain text)."""
    width = max(cell_len(line) for text in [header, *labels] for line in text.split("\n"))
    table.add_column(rich_escape(header), width=width, overflow="fold")


def _perturbations(columns: list[Column]) -> list[str]:
    """Each column's perturbation, left blank below its first metric."""
    names = [c.group for c in columns]
    return [name if i == 0 or names[i - 1] != name else "" for i, name in enumerate(names)]


@register_format("compare", "rich")
class RichComparison:
    """The rich table of a comparison, laid out when printed for the console's width.

    The first of `layouts` (widest first) that fits is printed: `wide`, the paper's shape;
    `models-as-columns`; `per-model` (a small table per model); `per-model-narrow`. With
    intervals each is tried with the interval beside the value, then under it (`ci-below`).
    A value column is as wide as its widest line, so numbers are never wrapped or cut. Every
    layout keeps the arrows, `(ref)`, differences and intervals; the marks only where a row
    or column shows more than one model's value, so not in the per-model tables.
    """

    def __init__(self, cmp: Comparison, ci: bool) -> None:
        self.cmp = cmp
        self.ci = ci

    def layouts(self) -> dict[str, Layout]:
        """Name -> builder of that layout given the spare width, widest first."""
        cells = {" ": ""} | ({"\n": " ci-below"} if self.ci else {})
        builders = {"wide": self.wide, "models-as-columns": self.models_as_columns}
        layouts: dict[str, Layout] = {}
        for name, build in builders.items():
            for sep, suffix in cells.items():
                layouts[name + suffix] = partial(build, sep)
        for sep, suffix in cells.items():
            layouts["per-model" + suffix] = partial(self.per_model, sep)
        layouts["per-model-narrow"] = partial(self.per_model, "\n" if self.ci else " ", narrow=True)
        return layouts

    def choose(self, console: Console, options: ConsoleOptions) -> tuple[str, RenderableType]:
        """The layout printed at `options.max_width`, with its name."""
        return first_that_fits(console, options, self.layouts())

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.choose(console, options)[1]

    def _cell(self, row: str, column: Column, sep: str, markup: Markup = RICH) -> str:
        return cell_text(self.cmp, row, column, markup, self.ci, sep)

    def _value_columns(
        self, table: Table, specs: list[tuple[str, list[str], list[Column]]], sep: str, spare: int
    ) -> None:
        """Right-aligned columns, one per (header, rows, columns) spec; see `_widths`."""
        plain = [
            [self._cell(r, c, sep, PLAIN) for r in rows for c in cols] for _, rows, cols in specs
        ]
        headers = [header for header, _, _ in specs]
        for header, width in zip(headers, _widths(headers, plain, spare), strict=True):
            header = rich_escape(wrap_label(header, width))
            table.add_column(header, justify="right", width=width, overflow="fold")

    def wide(self, sep: str, spare: int = 0) -> Table:
        """A row per model, a column per perturbation and metric."""
        cmp = self.cmp
        table = Table(title=rich_escape(cmp.title), title_justify="left")
        _label_column(table, "Model", [_row_label(cmp, row, PLAIN) for row in cmp.rows])
        specs = [(f"{c.group}\n{_header(c, PLAIN, False)}", cmp.rows, [c]) for c in cmp.columns]
        self._value_columns(table, specs, sep, spare)
        for row in cmp.rows:
            table.add_row(
                _row_label(cmp, row, RICH), *(self._cell(row, c, sep) for c in cmp.columns)
            )
        return table

    def models_as_columns(self, sep: str, spare: int = 0) -> Table:
        """A row per perturbation and metric, a column per model."""
        cmp = self.cmp
        table = Table(title=rich_escape(cmp.title), title_justify="left")
        perturbations = _perturbations(cmp.columns)
        _label_column(table, "Perturbation", perturbations)
        _label_column(table, "Metric", [_header(c, PLAIN, False) for c in cmp.columns])
        specs = [(_row_label(cmp, row, PLAIN), [row], cmp.columns) for row in cmp.rows]
        self._value_columns(table, specs, sep, spare)
        for shown, column in zip(perturbations, cmp.columns, strict=True):
            cells = [self._cell(row, column, sep) for row in cmp.rows]
            table.add_row(rich_escape(shown), _header(column, RICH, False), *cells)
        return table

    def per_model(self, sep: str, spare: int = 0, narrow: bool = False) -> Group:
        """A table per model, a row per perturbation and metric (`narrow`: both in one
        wrapping column). Every block has the same widths, so the blocks line up."""
        cmp = self.cmp
        perturbations = _perturbations(cmp.columns)
        metrics = [_header(c, RICH, False) for c in cmp.columns]
        parts: list[RenderableType] = [Text(cmp.title, style="table.title")]
        for row in cmp.rows:
            table = Table(title=_row_label(cmp, row, RICH), title_justify="left")
            if narrow:
                table.add_column("Perturbation\nMetric", overflow="fold")
                labels = [
                    [f"{rich_escape(c.group)}\n{m}"]
                    for c, m in zip(cmp.columns, metrics, strict=True)
                ]
            else:
                _label_column(table, "Perturbation", perturbations)
                _label_column(table, "Metric", [_header(c, PLAIN, False) for c in cmp.columns])
                labels = [[rich_escape(p), m] for p, m in zip(perturbations, metrics, strict=True)]
            self._value_columns(table, [("Value", cmp.rows, cmp.columns)], sep, 0)
            for label, column in zip(labels, cmp.columns, strict=True):
                table.add_row(*label, self._cell(row, column, sep, unmarked(RICH)))
            parts.append(table)
        return Group(*parts)


def _widths(headers: list[str], cells: list[list[str]], spare: int) -> list[int]:
    """Each value column's width: its widest value or header piece; then, while `spare`
    lasts, its widest header word, the columns that need least first."""
    narrow = [numeric_width(c, h, hyphenate=True) for h, c in zip(headers, cells, strict=True)]
    widths = list(narrow)
    wanted = [numeric_width(c, h) - n for h, c, n in zip(headers, cells, narrow, strict=True)]
    for i in sorted(range(len(widths)), key=wanted.__getitem__):
        grow = min(wanted[i], spare)
        widths[i] += grow
        spare -= grow
    return widths


# The csv's columns per perturbation and metric: suffix -> the number of a cell shown.
_CSV_VALUE: dict[str, Callable[[Cell], float | None]] = {"": lambda cell: _known(cell.value)}
_CSV_DIFF: dict[str, Callable[[Cell], float | None]] = {" diff": lambda cell: cell.diff}
_CSV_CI: dict[str, Callable[[Cell], float | None]] = {
    " ci_low": lambda cell: cell.ci95[0],
    " ci_high": lambda cell: cell.ci95[1],
}


def _known(value: float) -> float | None:
    """None (an empty csv cell, a JSON null) for a value that is not known (NaN)."""
    return None if math.isnan(value) else value


def cell_numbers(cmp: Comparison, ci: bool) -> dict[str, Callable[[Cell], float | None]]:
    """The csv's (and frame's) cell kinds, in order: column suffix -> the number shown."""
    return _CSV_VALUE | (_CSV_DIFF if cmp.reference is not None else {}) | (_CSV_CI if ci else {})


@register_format("compare", "csv", ".csv")
def csv_comparison(cmp: Comparison, ci: bool) -> str:
    """Plain numbers in display units, one column per cell kind, each as `repr` writes it
    (the shortest text that reads back as the same float)."""
    kinds = cell_numbers(cmp, ci)
    lines = [["model", "report"] + [f"{c.id}{suffix}" for suffix in kinds for c in cmp.columns]]
    for row in cmp.rows:
        numbers = [number(cmp.cell(row, c)) for number in kinds.values() for c in cmp.columns]
        lines.append(
            [row, cmp.sources[row], *("" if n is None else repr(float(n)) for n in numbers)]
        )
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(lines)
    return buffer.getvalue().rstrip("\n")


@register_format("compare", "json", ".json")
def json_comparison(cmp: Comparison, ci: bool) -> str:
    """Every cell with its value (display units), interval, difference and mark; and notes."""
    rows = []
    for row in cmp.rows:
        cells = {}
        for column in cmp.columns:
            cell = cmp.cell(row, column)
            known = _known(cell.value) is not None
            shown: dict[str, object] = {
                "value": round(cell.value, 6) if known else None,
                "ci95": [round(cell.ci95[0], 6), round(cell.ci95[1], 6)] if known else None,
                "mark": cell.mark or None,
            }
            if cell.diff is not None:
                shown["diff"] = round(cell.diff, 6)
            cells[column.id] = shown
        rows.append({"model": row, "report": cmp.sources[row], "cells": cells})
    payload = {
        "title": cmp.title,
        "reference": cmp.reference,
        "columns": [c.described() for c in cmp.columns],
        "rows": rows,
        "notes": cmp.notes,
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


@register_format("compare", "html", ".html", ".htm")
def html_comparison(cmp: Comparison, ci: bool, gate: GateSummary | None = None) -> str:
    """One self-contained HTML page (`compare/html/`), with the gate's checks when given."""
    from robench.results.compare.html import build_section, render_page

    reports = [(source, read_report(Path(source))) for source in cmp.sources.values()]
    section = build_section(reports, cmp)
    return render_page([section], title=f"robench compare: {cmp.title}", gate=gate)
