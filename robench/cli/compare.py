"""`robench compare`: one paper-style table of several reports."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from robench._core.errors import ConfigError
from robench.cli._output import err, handle_errors, out
from robench.results.report import Report, read_report


class CompareFormat(str, enum.Enum):
    """The names registered in `robench.results.compare_formats.COMPARE_FORMATS`."""

    rich = "rich"
    markdown = "markdown"
    csv = "csv"
    latex = "latex"
    json = "json"


def parse_metrics(text: str | None) -> list[str] | None:
    """`top1,top5` -> ["top1", "top5"]; None (all metrics) when not given."""
    if text is None:
        return None
    metrics = [part.strip() for part in text.split(",") if part.strip()]
    if not metrics:
        raise ConfigError(f"--metric {text!r} names no metric; pass e.g. --metric top1,top5.")
    return metrics


def _with_reference(
    paths: list[Path], reference: Path | None
) -> tuple[list[tuple[str, Report]], int | None]:
    """Read the reports; the reference is one of them or, if not, an extra first row."""
    reports = [(str(path), read_report(path)) for path in paths]
    if reference is None:
        return reports, None
    resolved = [path.resolve() for path in paths]
    if reference.resolve() in resolved:
        return reports, resolved.index(reference.resolve())
    return [(str(reference), read_report(reference)), *reports], 0


@handle_errors
def compare_command(
    reports: Annotated[
        list[Path], typer.Argument(help="Report JSON files written by `robench eval`.")
    ],
    fmt: Annotated[
        CompareFormat | None,
        typer.Option(
            "--format", "-f", help="Table format (default: rich on a terminal, else markdown)."
        ),
    ] = None,
    reference: Annotated[
        Path | None,
        typer.Option(
            "--reference",
            "-r",
            help="Report to show every value's difference to (one of REPORT..., or another).",
        ),
    ] = None,
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric", "-m", help="Comma-separated metrics, e.g. top1,top5 (default: all)."
        ),
    ] = None,
    ci: Annotated[bool, typer.Option("--ci", help="Show the 95% confidence intervals.")] = False,
    per_corruption: Annotated[
        bool,
        typer.Option(
            "--per-corruption",
            help="Instead: a row per corruption, a column per model, top-1 accuracy averaged "
            "over the severities, and a last row `mean`.",
        ),
    ] = False,
) -> None:
    """Compare reports side by side: best value bold, second best underlined.

    One row per report, one column per perturbation and metric; best is direction-aware (↑/↓).
    Aggregates in the reports (corruption errors, mean accuracies) follow as extra columns.

    Columns that are not comparable are dropped, and different sample sets flagged, on stderr.

    On a terminal the table fits its width: models as columns, or one table per model.

    Examples:
      robench compare runs/deit.json runs/deit_elliptical.json
      robench compare runs/*.json --format latex --metric top1 > table2.tex
      robench compare runs/*.json -r runs/deit.json --ci --format markdown
      robench compare runs/resnet50-c.json runs/vit-c.json --per-corruption
    """
    name = fmt.value if fmt is not None else ("rich" if out.is_terminal else "markdown")
    if per_corruption:
        _per_corruption(reports, name)
        return
    from robench.results.compare import build_comparison
    from robench.results.compare_formats import COMPARE_FORMATS

    loaded, reference_index = _with_reference(reports, reference)
    comparison = build_comparison(loaded, metrics=parse_metrics(metric), reference=reference_index)
    _show(COMPARE_FORMATS.get(name)(comparison, ci), comparison.notes)


def _per_corruption(paths: list[Path], name: str) -> None:
    from robench.results.per_corruption import PER_CORRUPTION_FORMATS, build_per_corruption

    table = build_per_corruption([(str(path), read_report(path)) for path in paths])
    _show(PER_CORRUPTION_FORMATS.get(name)(table), table.notes)


def _show(rendered: object, notes: list[str]) -> None:
    """Notes on stderr, the table on stdout (text as is, rich renderables printed)."""
    for note in notes:
        err.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    if isinstance(rendered, str):
        typer.echo(rendered)
    else:
        out.print(rendered)
