"""Human-readable tables of one report: metric, direction, value and 95% interval.

Values are shown as percentages (reports store fractions), in the shape of lm-eval's
`make_table`: `Perturbation | Metric | dir | Value | 95% CI`.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.table import Table

from robench.registry import Registry
from robench.report import Report

ARROWS = {True: "↑", False: "↓"}


def report_rows(report: Report) -> list[list[str]]:
    rows = []
    for result in report.results:
        eps = result.params.get("eps_display")
        label = f"{result.name} (eps {eps})" if eps else result.name
        for metric, value in result.metrics.items():
            low, high = value.ci95
            rows.append(
                [
                    label,
                    metric,
                    ARROWS[value.higher_is_better],
                    f"{100 * value.value:.2f}",
                    f"[{100 * low:.2f}, {100 * high:.2f}]",
                    str(result.n_samples),
                ]
            )
    return rows


HEADER = ["Perturbation", "Metric", "", "Value (%)", "95% CI", "n"]

REPORT_FORMATS: Registry[Callable[[Report], object]] = Registry("table format")


SANITY_HEADER = ["Sanity check", "Status", "Detail"]
DIAGNOSTIC_HEADER = ["Diagnostic", "Values (scalars; per-layer lists in the report)"]


def diagnostic_rows(report: Report) -> list[list[str]]:
    rows = []
    for d in report.diagnostics:
        scalars = [f"{k} {v:.4g}" for k, v in d.values.items() if isinstance(v, int | float)]
        rows.append([d.name, ", ".join(scalars) or "-"])
    return rows


def sanity_rows(report: Report) -> list[list[str]]:
    return [[s.name, s.status, s.detail] for s in report.sanity]


@REPORT_FORMATS.register("rich")
def rich_table(report: Report) -> RenderableType:
    title = f"{report.model.name} · {report.suite.name} v{report.suite.version}"
    table = Table(title=title, title_justify="left")
    for i, name in enumerate(HEADER):
        table.add_column(name, justify="right" if i >= 3 else "left")
    for row in report_rows(report):
        table.add_row(*row)
    parts: list[RenderableType] = [table]
    if report.diagnostics:
        diag = Table(title="Diagnostics", title_justify="left")
        for name in DIAGNOSTIC_HEADER:
            diag.add_column(name)
        for row in diagnostic_rows(report):
            diag.add_row(*row)
        parts.append(diag)
    if report.sanity:
        checks = Table(title="Sanity battery", title_justify="left")
        for name in SANITY_HEADER:
            checks.add_column(name)
        for name, status, detail in sanity_rows(report):
            checks.add_row(
                name, "[green]pass[/]" if status == "pass" else "[yellow]warn[/]", detail
            )
        parts.append(checks)
    return parts[0] if len(parts) == 1 else Group(*parts)


def _markdown(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(row) + " |" for row in rows
    ]


@REPORT_FORMATS.register("markdown")
def markdown_table(report: Report) -> str:
    lines = _markdown(HEADER, report_rows(report))
    if report.diagnostics:
        lines += ["", *_markdown(DIAGNOSTIC_HEADER, diagnostic_rows(report))]
    if report.sanity:
        lines += ["", *_markdown(SANITY_HEADER, sanity_rows(report))]
    return "\n".join(lines)


@REPORT_FORMATS.register("json")
def json_report(report: Report) -> str:
    return report.model_dump_json(indent=2)
