"""The per-corruption table of `robench compare --per-corruption`: a row per corruption, a
column per model, each cell one metric averaged over severities, a last row `mean`; best bold,
second underlined per row.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.table import Table

from robench._core.errors import ConfigError
from robench.results.compare.comparison import best_marks, comparable_params, row_labels
from robench.results.compare.formats import LATEX, MARKDOWN, PLAIN, RICH, Markup, marked
from robench.results.compare.tables import markdown_lines, numeric_width
from robench.results.report.output_formats import PER_CORRUPTION_FORMATS as PER_CORRUPTION_FORMATS
from robench.results.report.output_formats import register_format
from robench.results.report.schema import Report
from robench.results.stats.aggregates import corruption_groups
from robench.results.stats.metrics import higher_is_better, metric_display

MEAN_ROW = "mean"


@dataclass
class PerCorruption:
    """Values in display units: (corruption, model) -> (value, mark)."""

    corruptions: list[str]  # row labels (`fog`, or `fog @dataset` over several datasets)
    models: list[str]
    cells: dict[tuple[str, str], tuple[float, str]]
    severities: dict[str, list[int]]  # corruption -> the severities averaged
    sources: dict[str, str]
    notes: list[str] = field(default_factory=list)
    metric: str = "top1"  # the metric averaged

    @property
    def header(self) -> str:
        """`Corruption (top-1 %)`: what the label column's rows hold, and in what unit."""
        display = metric_display(self.metric)
        return f"Corruption ({display.label}{' ' + display.unit if display.unit else ''})"

    @property
    def higher_is_better(self) -> bool:
        return higher_is_better(self.metric, True)


def _keyed(report: Report, metric: str) -> dict[tuple[str, str, int], tuple[str, float]]:
    """(dataset, corruption, severity) -> (comparable params, the metric's value)."""
    found: dict[tuple[str, str, int], tuple[str, float]] = {}
    for dataset, results in corruption_groups(report).items():
        for r in results:
            key = (dataset, str(r.params["corruption"]), int(r.params.get("severity", 0)))
            if metric in r.metrics:
                found.setdefault(key, (comparable_params(r.params), r.metrics[metric].value))
    return found


def _first_metric(reports: Sequence[tuple[str, Report]]) -> str:
    """top-1 where the corruption results have it, else their first metric (mIoU)."""
    metrics = [
        metric
        for _, report in reports[:1]
        for results in corruption_groups(report).values()
        for result in results
        for metric in result.metrics
    ]
    return "top1" if "top1" in metrics or not metrics else metrics[0]


def build_per_corruption(
    reports: Sequence[tuple[str, Report]], metric: str | None = None
) -> PerCorruption:
    """The per-corruption table of `(path, report)` pairs: `metric` averaged over severities
    (None: top-1, or the task's first metric where there is none, mIoU for segmentation)."""
    metric = metric or _first_metric(reports)
    labels = row_labels(reports)
    keyed = [_keyed(report, metric) for _, report in reports]
    scale = metric_display(metric).scale
    better = higher_is_better(metric, True)
    # Only results every report has, with the same parameters, count: every model is then
    # averaged over the same severities.
    shared = [k for k in keyed[0] if all(k in other for other in keyed[1:])]
    kept = [k for k in shared if len({found[k][0] for found in keyed}) == 1]
    dropped = sorted({k for found in keyed for k in found} - set(kept))
    if not kept:
        raise ConfigError(
            "no corruption result is present, with the same parameters, in every report; "
            "compare reports of a corruption suite (e.g. imagenet-c)."
        )
    datasets = {d for d, _, _ in kept}
    rows: dict[str, list[tuple[str, str, int]]] = {}
    for key in kept:
        label = key[1] if len(datasets) == 1 else f"{key[1]} @{key[0]}"
        rows.setdefault(label, []).append(key)
    values = {
        row: [scale * sum(found[k][1] for k in keys) / len(keys) for found in keyed]
        for row, keys in rows.items()
    }
    values[MEAN_ROW] = [sum(column) / len(column) for column in zip(*values.values(), strict=True)]
    cells = {
        (row, model): (value, mark)
        for row, shown in values.items()
        for model, value, mark in zip(labels, shown, best_marks(shown, better), strict=True)
    }
    notes = []
    if dropped:
        shown = ", ".join(f"{c}-{s}" for _, c, s in dropped[:5])
        more = f" and {len(dropped) - 5} more" if len(dropped) > 5 else ""
        notes.append(
            f"left out corruption results not present with the same parameters in every "
            f"report: {shown}{more}."
        )
    return PerCorruption(
        corruptions=[*rows, MEAN_ROW],
        models=labels,
        cells=cells,
        severities={row: sorted(s for _, _, s in keys) for row, keys in rows.items()},
        sources={label: path for label, (path, _) in zip(labels, reports, strict=True)},
        notes=notes,
        metric=metric,
    )


def _text(table: PerCorruption, row: str, model: str, markup: Markup) -> str:
    value, mark = table.cells[row, model]
    return marked(f"{value:.2f}", mark, markup)


def _lines(table: PerCorruption, markup: Markup) -> list[list[str]]:
    header = [markup.escape(table.header) + " " + markup.arrows[table.higher_is_better]]
    body = [
        [markup.escape(row)] + [_text(table, row, m, markup) for m in table.models]
        for row in table.corruptions
    ]
    return [header + [markup.escape(m) for m in table.models], *body]


@register_format("per-corruption", "markdown")
def markdown_per_corruption(table: PerCorruption) -> str:
    header, *body = _lines(table, MARKDOWN)
    return "\n".join(markdown_lines(header, body, right=len(table.models)))


def _markdown_long(table: PerCorruption) -> str:
    """A row per corruption and model: as narrow as a model name, however many models."""
    header, *body = _lines(table, MARKDOWN)
    rows = [
        [row[0] if i == 0 else "", model, value]
        for row in body
        for i, (model, value) in enumerate(zip(header[1:], row[1:], strict=True))
    ]
    return "\n".join(markdown_lines([header[0], "Model", "Value"], rows, right=1))


def markdown_per_corruption_fitting(table: PerCorruption, width: int) -> str:
    """The markdown table with a column per model where it fits `width`, else `_markdown_long`."""
    wide = str(markdown_per_corruption(table))
    if max(cell_len(line) for line in wide.splitlines()) <= width:
        return wide
    return _markdown_long(table)


@register_format("per-corruption", "latex")
def latex_per_corruption(table: PerCorruption) -> str:
    header, *body = _lines(table, LATEX)
    lines = [r"\begin{tabular}{l" + "r" * len(table.models) + "}", r"\toprule"]
    lines += [" & ".join(header) + r" \\", r"\midrule"]
    lines += [" & ".join(row) + r" \\" for row in body[:-1]]
    lines += [r"\midrule", " & ".join(body[-1]) + r" \\", r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


@register_format("per-corruption", "rich")
def rich_per_corruption(table: PerCorruption) -> Table:
    header, *body = _lines(table, RICH)
    name = metric_display(table.metric).label
    shown = Table(title=f"{name} per corruption (mean over severities)", title_justify="left")
    shown.add_column(header[0], overflow="fold")
    for i, model in enumerate(header[1:], start=1):
        # As wide as its numbers: a long model name wraps after '-' or '_', never a number.
        width = numeric_width([line[i] for line in _lines(table, PLAIN)[1:]], model, True)
        shown.add_column(model, justify="right", min_width=width, overflow="fold")
    for i, row in enumerate(body):
        shown.add_row(*row, end_section=i == len(body) - 2)
    return shown


@register_format("per-corruption", "csv")
def csv_per_corruption(table: PerCorruption) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["corruption", *table.models])
    for row in table.corruptions:
        writer.writerow([row, *(repr(float(table.cells[row, m][0])) for m in table.models)])
    return buffer.getvalue().rstrip("\n")


def _json_cell(value: float, mark: str) -> dict[str, object]:
    return {"value": round(value, 6), "mark": mark or None}


@register_format("per-corruption", "json")
def json_per_corruption(table: PerCorruption) -> str:
    rows = [
        {
            "corruption": row,
            "severities": table.severities.get(row),
            "cells": {m: _json_cell(*table.cells[row, m]) for m in table.models},
        }
        for row in table.corruptions
    ]
    payload = {"models": table.models, "reports": table.sources, "rows": rows, "notes": table.notes}
    return json.dumps(payload, indent=2, ensure_ascii=False)
