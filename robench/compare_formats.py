"""Output formats of `robench compare`: rich, markdown, csv, latex and json renderings of a
`Comparison`, registered in `COMPARE_FORMATS` (best bold, second underlined where the format
can show it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from rich.markup import escape as rich_escape
from rich.table import Table

from robench.compare import ARROWS, Column, Comparison
from robench.registry import Registry


@dataclass(frozen=True)
class Markup:
    """How one output format writes emphasis, escapes text and shows a direction."""

    bold: Callable[[str], str]
    underline: Callable[[str], str]
    escape: Callable[[str], str]
    arrows: dict[bool, str]


def _identity(text: str) -> str:
    return text


def cell_text(cmp: Comparison, row: str, column: Column, markup: Markup, ci: bool) -> str:
    """`54.64 (+2.03) [53.66, 55.61]`: value (marked), difference to the reference, interval."""
    key = column.key
    text = f"{cmp.values.at[row, key]:.2f}"
    emphasis = {"best": markup.bold, "second": markup.underline}.get(cmp.marks.at[row, key])
    text = emphasis(text) if emphasis else text
    if cmp.diffs is not None and row != cmp.reference:
        diff = round(float(cmp.diffs.at[row, key]), 2) + 0.0  # + 0.0 turns -0.0 into 0.0
        text += f" ({diff:+.2f})"
    if ci:
        text += f" [{cmp.ci_low.at[row, key]:.2f}, {cmp.ci_high.at[row, key]:.2f}]"
    return text


def _header(column: Column, markup: Markup, with_perturbation: bool = True) -> str:
    display = column.display
    unit = f" ({display.unit})" if display.unit else ""
    name = f"{column.perturbation} " if with_perturbation else ""
    return (
        markup.escape(f"{name}{display.label}{unit}") + " " + markup.arrows[column.higher_is_better]
    )


def _row_label(cmp: Comparison, row: str, markup: Markup) -> str:
    return markup.escape(row + (" (ref)" if row == cmp.reference else ""))


COMPARE_FORMATS: Registry[Callable[[Comparison, bool], object]] = Registry("compare format")

_MARKDOWN = Markup(
    bold=lambda s: f"**{s}**",
    underline=lambda s: f"<u>{s}</u>",
    escape=lambda s: s.replace("|", r"\|"),
    arrows=ARROWS,
)


@COMPARE_FORMATS.register("markdown")
def markdown_comparison(cmp: Comparison, ci: bool) -> str:
    """A GitHub-flavoured markdown table (bold `**x**`, underline `<u>x</u>`)."""
    header = ["Model"] + [_header(c, _MARKDOWN) for c in cmp.columns]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(cmp.columns)]
    for row in cmp.rows:
        cells = [_row_label(cmp, row, _MARKDOWN)]
        cells += [cell_text(cmp, row, c, _MARKDOWN, ci) for c in cmp.columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}

_LATEX = Markup(
    bold=lambda s: rf"\textbf{{{s}}}",
    underline=lambda s: rf"\underline{{{s}}}",
    escape=lambda s: "".join(_LATEX_ESCAPES.get(ch, ch) for ch in s),
    arrows={True: r"$\uparrow$", False: r"$\downarrow$"},
)


@COMPARE_FORMATS.register("latex")
def latex_comparison(cmp: Comparison, ci: bool) -> str:
    """A booktabs `tabular`: perturbations over their metrics, `\\textbf` and `\\underline`."""
    groups: dict[str, list[Column]] = {}
    for column in cmp.columns:
        groups.setdefault(column.perturbation, []).append(column)
    top, rules, start = [""], [], 2
    for name, cols in groups.items():
        top.append(rf"\multicolumn{{{len(cols)}}}{{c}}{{{_LATEX.escape(name)}}}")
        rules.append(rf"\cmidrule(lr){{{start}-{start + len(cols) - 1}}}")
        start += len(cols)
    second = ["Model"] + [_header(c, _LATEX, with_perturbation=False) for c in cmp.columns]
    lines = [
        r"\begin{tabular}{l" + "r" * len(cmp.columns) + "}",
        r"\toprule",
        " & ".join(top) + r" \\",
        " ".join(rules),
        " & ".join(second) + r" \\",
        r"\midrule",
    ]
    for row in cmp.rows:
        cells = [_row_label(cmp, row, _LATEX)]
        cells += [cell_text(cmp, row, c, _LATEX, ci) for c in cmp.columns]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


_RICH = Markup(
    bold=lambda s: f"[bold]{s}[/bold]",
    underline=lambda s: f"[underline]{s}[/underline]",
    escape=rich_escape,
    arrows=ARROWS,
)


@COMPARE_FORMATS.register("rich")
def rich_comparison(cmp: Comparison, ci: bool) -> Table:
    """A rich table for the terminal (bold and underlined cells)."""
    table = Table(title=rich_escape(cmp.title), title_justify="left")
    table.add_column("Model", no_wrap=True, min_width=max(len(row) for row in cmp.rows) + 6)
    for column in cmp.columns:
        header = rich_escape(column.perturbation) + "\n" + _header(column, _RICH, False)
        table.add_column(header, justify="right")
    for row in cmp.rows:
        cells = [cell_text(cmp, row, c, _RICH, ci) for c in cmp.columns]
        table.add_row(_row_label(cmp, row, _RICH), *cells)
    return table


def _flat(frame: pd.DataFrame, suffix: str) -> pd.DataFrame:
    flat = frame.copy()
    flat.columns = [f"{p}/{m}{suffix}" for p, m in frame.columns]
    return flat


@COMPARE_FORMATS.register("csv")
def csv_comparison(cmp: Comparison, ci: bool) -> str:
    """Plain numbers in display units (percent for accuracies), one column per cell kind."""
    parts = [_flat(cmp.values, "")]
    if cmp.diffs is not None:
        parts.append(_flat(cmp.diffs, " diff"))
    if ci:
        parts += [_flat(cmp.ci_low, " ci_low"), _flat(cmp.ci_high, " ci_high")]
    table = pd.concat(parts, axis=1)
    table.insert(0, "report", [cmp.sources[row] for row in cmp.rows])
    table.index.name = "model"
    return table.to_csv(float_format="%.4f", lineterminator="\n").rstrip("\n")


@COMPARE_FORMATS.register("json")
def json_comparison(cmp: Comparison, ci: bool) -> str:
    """Every cell with its value (display units), interval, difference and mark; and notes."""
    rows = []
    for row in cmp.rows:
        cells = {}
        for column in cmp.columns:
            key = column.key
            cell: dict[str, object] = {
                "value": round(float(cmp.values.at[row, key]), 6),
                "ci95": [
                    round(float(cmp.ci_low.at[row, key]), 6),
                    round(float(cmp.ci_high.at[row, key]), 6),
                ],
                "mark": cmp.marks.at[row, key] or None,
            }
            if cmp.diffs is not None:
                cell["diff"] = round(float(cmp.diffs.at[row, key]), 6)
            cells["/".join(key)] = cell
        rows.append({"model": row, "report": cmp.sources[row], "cells": cells})
    columns = [
        {
            "perturbation": c.perturbation,
            "metric": c.metric,
            "higher_is_better": c.higher_is_better,
            "unit": c.display.unit,
        }
        for c in cmp.columns
    ]
    payload = {
        "title": cmp.title,
        "reference": cmp.reference,
        "columns": columns,
        "rows": rows,
        "notes": cmp.notes,
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)
