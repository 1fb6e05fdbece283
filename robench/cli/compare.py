"""`robench compare`: one paper-style table of several reports, or a self-contained HTML
page with the table, figures, the gate's verdicts and provenance (`--format html`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from robench._core.errors import ConfigError
from robench._core.overwrite_guard import refuse_overwriting_inputs
from robench._core.plugins import FORMAT_ENTRY_POINT_GROUP
from robench.cli._output import err, handle_errors, out, table_width
from robench.cli._registry_options import choices_metavar, import_plugins, registry_choice
from robench.results.compare.formats import COMPARE_FORMATS
from robench.results.report.output_formats import file_formats, format_for_suffix
from robench.results.report.schema import Report, check_writable, read_report


def parse_metrics(text: str | None) -> list[str] | None:
    """`top1,top5` -> ["top1", "top5"]; None (all metrics) when not given."""
    if text is None:
        return None
    metrics = [part.strip() for part in text.split(",") if part.strip()]
    if not metrics:
        raise ConfigError(f"--metric {text!r} names no metric; pass e.g. --metric top1,top5.")
    return metrics


def parse_budgets(text: str | None) -> list[float]:
    """`1/255,0.01` -> [0.0039..., 0.01]; [] when not given."""
    if text is None:
        return []
    from robench._core.units import parse_pixel_value

    budgets = [
        parse_pixel_value(part.strip(), "--at-eps") for part in text.split(",") if part.strip()
    ]
    if not budgets or any(b < 0 for b in budgets):
        raise ConfigError(f"--at-eps {text!r} must list budgets >= 0, e.g. --at-eps 1/255,2/255.")
    return budgets


def parse_radii(text: str | None) -> list[float]:
    """`0.25,0.5` -> [0.25, 0.5] (L2 radii, pixel units); [] when not given."""
    if text is None:
        return []
    from robench._core.units import parse_pixel_value

    radii = [
        parse_pixel_value(part.strip(), "--at-radius") for part in text.split(",") if part.strip()
    ]
    if not radii or any(r < 0 for r in radii):
        raise ConfigError(
            f"--at-radius {text!r} must list L2 radii >= 0 (pixel units), e.g. --at-radius "
            "0.25,0.5."
        )
    return radii


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
def compare_command(  # long: 92 lines of typer options and 25 of help; the code is 22
    reports: Annotated[
        list[Path], typer.Argument(help="Report JSON files written by `robench eval`.")
    ],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            # The registry's names, a plugin's (--import) included, as a choice is shown.
            parser=registry_choice(COMPARE_FORMATS, FORMAT_ENTRY_POINT_GROUP),
            metavar=choices_metavar(COMPARE_FORMATS),
            help="Table format (default: rich on a terminal, else markdown).",
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
    at_eps: Annotated[
        str | None,
        typer.Option(
            "--at-eps",
            help="Comma-separated budgets, e.g. 1/255,3/255: a column of top-1 at each, read "
            "from every minimal-norm result's per-sample norms (up to its cap).",
        ),
    ] = None,
    at_radius: Annotated[
        str | None,
        typer.Option(
            "--at-radius",
            help="Comma-separated L2 radii, e.g. 0.25,0.5: a column of certified accuracy at "
            "each, read from every randomized-smoothing result's per-sample certificates.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the table or page here instead of stdout; its suffix ("
            + ", ".join(
                s for n in file_formats(COMPARE_FORMATS) for s in COMPARE_FORMATS.get(n).suffixes
            )
            + ") sets the format when --format is not given.",
        ),
    ] = None,
    gate: Annotated[
        Path | None,
        typer.Option(
            "--gate",
            help="With --format html: show the checks of this `robench gate --json` file.",
        ),
    ] = None,
    cost: Annotated[
        bool,
        typer.Option(
            "--cost",
            help="Show each result's counted model passes per sample (forward + backward; "
            '"unknown" for reports written before robench counted them). Always on the html '
            "page.",
        ),
    ] = False,
    per_corruption: Annotated[
        bool,
        typer.Option(
            "--per-corruption",
            help="Instead: a row per corruption, a column per model, top-1 accuracy (or "
            "--metric, e.g. miou) averaged over the severities, and a last row `mean`.",
        ),
    ] = False,
    imports: Annotated[
        list[str] | None,
        typer.Option(
            "--import",
            is_eager=True,  # loaded before --format is checked, wherever it stands
            callback=import_plugins((FORMAT_ENTRY_POINT_GROUP,)),
            help="Module or .py file that registers output formats (repeatable).",
        ),
    ] = None,
) -> None:
    """Compare reports side by side: best value bold, second best underlined.

    One row per report, one column per perturbation and metric; best is direction-aware (↑/↓).
    Aggregates in the reports (corruption errors, mean accuracies) follow as extra columns.

    Columns that are not comparable are dropped, and different sample sets flagged, on stderr.

    On a terminal the table fits its width: models as columns, or one table per model (no
    value marked there: nothing beside it to beat). So does the default markdown on a pipe
    (COLUMNS characters, else 120); `-o table.md`, or an explicit --format on a pipe, gives
    the paper's shape whatever its width.

    `--format html` writes one self-contained page (no network, figures inline): the table
    (sortable, intervals on hover), the figures that apply to the reports, the gate's checks
    (--gate) and each model's provenance.

    Examples:
      robench compare runs/deit.json runs/deit_elliptical.json
      robench compare runs/*.json --format latex --metric top1 > table2.tex
      robench compare runs/*.json -r runs/deit.json --ci --format markdown
      robench compare runs/resnet50-c.json runs/vit-c.json --per-corruption
      robench compare runs/*.json --format html -o page.html
      robench compare runs/fmn.json --at-eps 1/255,3/255 --ci
      robench compare runs/certify-*.json --at-radius 0.25,0.5 --ci
      robench compare runs/aa.json runs/malt.json --cost
      robench compare base.json new.json -o page.html --gate gate.json
      robench compare runs/*.json --import my_formats.py --format mine
    """
    inputs = [("REPORT", path) for path in reports] + [("--reference", reference), ("--gate", gate)]
    refuse_overwriting_inputs({"--output": output}, inputs, "compare")
    name = _format_name(fmt, output)
    if gate is not None and name != "html":
        raise ConfigError(f"--gate is shown on the html page only; add --format html ({name}).")
    if per_corruption:
        if name == "html":
            raise ConfigError("--per-corruption has no html page; drop --per-corruption.")
        fitting = _fitting(name, fmt, output)
        _per_corruption(reports, name, output, parse_metrics(metric), fitting)
        return
    from robench.results.compare.comparison import build_comparison

    loaded, reference_index = _with_reference(reports, reference)
    comparison = build_comparison(
        loaded,
        metrics=parse_metrics(metric),
        reference=reference_index,
        at_eps=parse_budgets(at_eps),
        at_radius=parse_radii(at_radius),
        cost=cost or name == "html",
    )
    if _fitting(name, fmt, output):
        from robench.results.compare.formats import markdown_fitting

        _show(markdown_fitting(comparison, ci, table_width()), comparison.notes)
        return
    # Only the html page takes more than the comparison: the gate's checks.
    extra = {"gate": _gate_summary(gate)} if gate is not None else {}
    _show(COMPARE_FORMATS.get(name)(comparison, ci, **extra), comparison.notes, output)


def _gate_summary(path: Path) -> object:
    # Imported here: the gate's modules cost a tenth of `robench compare`'s start-up.
    from robench.results.gate.formats import read_gate_summary

    return read_gate_summary(path)


def _format_name(fmt: str | None, output: Path | None) -> str:
    """--format, else the output file's suffix, else rich on a terminal and markdown when not."""
    if fmt is not None:
        return fmt
    if output is not None:
        return format_for_suffix(COMPARE_FORMATS, output.suffix) or "markdown"
    return "rich" if out.is_terminal else "markdown"


def _fitting(name: str, fmt: str | None, output: Path | None) -> bool:
    """Whether the markdown is read on a terminal or in a log, and so gets a layout that fits
    its width: on stdout, unless --format was chosen on a pipe (`> table.md`); `-o` keeps the
    paper's shape."""
    return name == "markdown" and output is None and (fmt is None or out.is_terminal)


def _per_corruption(
    paths: list[Path],
    name: str,
    output: Path | None,
    metrics: list[str] | None,
    fitting: bool,
) -> None:
    from robench.results.compare.per_corruption import (
        PER_CORRUPTION_FORMATS,
        build_per_corruption,
        markdown_per_corruption_fitting,
    )

    if metrics is not None and len(metrics) > 1:
        raise ConfigError(
            f"--per-corruption averages one metric, got --metric {','.join(metrics)}; pass one "
            "(e.g. --metric miou)."
        )
    reports = [(str(path), read_report(path)) for path in paths]
    table = build_per_corruption(reports, metrics[0] if metrics else None)
    if fitting:
        _show(markdown_per_corruption_fitting(table, table_width()), table.notes)
        return
    _show(PER_CORRUPTION_FORMATS.get(name)(table), table.notes, output)


def _show(rendered: object, notes: list[str], output: Path | None = None) -> None:
    """Notes on stderr, the table on stdout (text as is, rich renderables printed) or, with
    `output`, in that file."""
    for note in notes:
        err.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    if output is not None:
        if not isinstance(rendered, str):
            names = file_formats(COMPARE_FORMATS)
            raise ConfigError(
                f"--output {output}: the rich table is for the terminal; pass --format "
                f"{', '.join(names[:-1])} or {names[-1]}."
            )
        check_writable(output, "--output", "table.md")
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(rendered if rendered.endswith("\n") else rendered + "\n", "utf-8")
        err.print(f"wrote {escape(str(output))}", highlight=False)
    elif isinstance(rendered, str):
        typer.echo(rendered, nl=not rendered.endswith("\n"))
    else:
        out.print(rendered)
