"""`robench compare`: one paper-style table of several reports, or a self-contained HTML
page with the table, figures, the gate's verdicts and provenance (`--format html`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from robench._core.errors import ConfigError
from robench._core.overwrite_guard import refuse_overwriting_inputs
from robench.cli._option_table import REQUIRED, Opt, with_options
from robench.cli._output import err, handle_errors, out, table_width
from robench.cli._registry_options import plugin_imports, registry_names
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


def _pixel_values(text: str | None, flag: str, what: str, example: str) -> list[float]:
    """`1/255,0.01` -> [0.0039..., 0.01] (pixel units); [] when not given."""
    if text is None:
        return []
    from robench._core.units import parse_pixel_value

    values = [parse_pixel_value(part.strip(), flag) for part in text.split(",") if part.strip()]
    if not values or any(value < 0 for value in values):
        raise ConfigError(f"{flag} {text!r} must list {what}, e.g. {flag} {example}.")
    return values


# --at-eps's budgets and --at-radius's L2 radii: flag, what they are, an example.
_BUDGETS = ("--at-eps", "budgets >= 0", "1/255,2/255")
_RADII = ("--at-radius", "L2 radii >= 0 (pixel units)", "0.25,0.5")


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


_SUFFIXES = tuple(s for n in file_formats(COMPARE_FORMATS) for s in COMPARE_FORMATS.get(n).suffixes)
_OUTPUT_HELP = (
    f"Write the table or page here instead of stdout; its suffix ({', '.join(_SUFFIXES)}) sets "
    "the format when --format is not given."
)
# `robench compare`'s options, one row each (robench/cli/_option_table.py).
COMPARE_OPTIONS = (
    Opt("reports", list[Path], REQUIRED,
        "Report JSON files written by `robench eval`.", argument=True),
    Opt("format", str, None,
        "Table format (default: rich on a terminal, else markdown).",
        "-f", extra=registry_names(COMPARE_FORMATS)),
    Opt("reference", Path, None,
        "Report to show every value's difference to (one of REPORT..., or another).", "-r"),
    Opt("metric", str, None, "Comma-separated metrics, e.g. top1,top5 (default: all).", "-m"),
    Opt("ci", bool, False, "Show the 95% confidence intervals."),
    Opt("at_eps", str, None,
        "Comma-separated budgets, e.g. 1/255,3/255: a column of top-1 at each, read from every "
        "minimal-norm result's per-sample norms (up to its cap)."),
    Opt("at_radius", str, None,
        "Comma-separated L2 radii, e.g. 0.25,0.5: a column of certified accuracy at each, read "
        "from every randomized-smoothing result's per-sample certificates."),
    Opt("output", Path, None, _OUTPUT_HELP, "-o"),
    Opt("gate", Path, None,
        "With --format html: show the checks of this `robench gate --json` file."),
    Opt("cost", bool, False,
        'Show each result\'s counted model passes per sample (forward + backward; "unknown" for '
        "reports written before robench counted them). Always on the html page."),
    Opt("per_corruption", bool, False,
        "Instead: a row per corruption, a column per model, top-1 accuracy (or --metric, e.g. "
        "miou) averaged over the severities, and a last row `mean`."),
    Opt("imports", list[str], None,
        "Module or .py file that registers output formats (repeatable).",
        flag="--import", extra=plugin_imports()),
)  # fmt: skip


@handle_errors
@with_options(*COMPARE_OPTIONS)
def compare_command(**given: Any) -> None:
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
    reports, reference, gate, output = (
        given[n] for n in ("reports", "reference", "gate", "output")
    )
    inputs = [("REPORT", path) for path in reports] + [("--reference", reference), ("--gate", gate)]
    refuse_overwriting_inputs({"--output": output}, inputs, "compare")
    fmt = given["format"]
    name = _format_name(fmt, output)
    if gate is not None and name != "html":
        raise ConfigError(f"--gate is shown on the html page only; add --format html ({name}).")
    metrics = given["metric"]
    if given["per_corruption"]:
        if name == "html":
            raise ConfigError("--per-corruption has no html page; drop --per-corruption.")
        fitting = _fitting(name, fmt, output)
        _per_corruption(reports, name, output, parse_metrics(metrics), fitting)
        return
    from robench.results.compare.comparison import build_comparison

    loaded, reference_index = _with_reference(reports, reference)
    comparison = build_comparison(
        loaded,
        metrics=parse_metrics(metrics),
        reference=reference_index,
        at_eps=_pixel_values(given["at_eps"], *_BUDGETS),
        at_radius=_pixel_values(given["at_radius"], *_RADII),
        cost=given["cost"] or name == "html",
    )
    if _fitting(name, fmt, output):
        from robench.results.compare.formats import markdown_fitting

        _show(markdown_fitting(comparison, given["ci"], table_width()), comparison.notes)
        return
    # Only the html page takes more than the comparison: the gate's checks.
    extra: dict[str, object] = {}
    if gate is not None:
        # Imported here: the gate's modules cost a tenth of `robench compare`'s start-up.
        from robench.results.gate.formats import read_gate_summary

        extra["gate"] = read_gate_summary(gate)
    _show(COMPARE_FORMATS.get(name)(comparison, given["ci"], **extra), comparison.notes, output)


def _format_name(fmt: str | None, output: Path | None) -> str:
    """--format, else the output file's suffix, else rich on a terminal and markdown when not."""
    if fmt is not None:
        return fmt
    if output is not None:
        return format_for_suffix(COMPARE_FORMATS, output.suffix) or "markdown"
    return "rich" if out.is_terminal else "markdown"


def _fitting(name: str, fmt: str | None, output: Path | None) -> bool:
    """Whether the markdown gets a layout that fits the width: on stdout, unless --format was
    chosen on a pipe (`> table.md`); `-o` keeps the paper's shape."""
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
    """Notes on stderr, the table on stdout or, with `output`, in that file."""
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
