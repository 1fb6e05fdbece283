"""`robench gate`: fail CI when a candidate's robustness regressed against a baseline.

Besides the exit code, the gate writes what CI systems show: a markdown summary (`--summary`,
and appended to `$GITHUB_STEP_SUMMARY` when set), JUnit XML with one testcase per check and a
JSON summary (`--json`, read back by `robench compare --format html --gate`), all rendered by
`robench.results.gate_formats`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from robench._core.errors import EXIT_OK
from robench.cli._output import err, handle_errors, out
from robench.results.gate import GateResult, Status, exit_code, run_gate
from robench.results.gate_formats import (
    GATE_FORMATS,
    STATUS_STYLE,
    markdown_table,
    rich_table,
    summary_markdown,
)
from robench.results.gate_policy import read_policy
from robench.results.report import check_writable, read_report


def _write_outputs(result: GateResult, paths: dict[str, Path | None], strict: bool) -> None:
    """Write each format of `GATE_FORMATS` given a path; the summary also goes to
    `$GITHUB_STEP_SUMMARY` when set (GitHub Actions shows it on the run's page)."""
    for name, path in paths.items():
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(str(GATE_FORMATS.get(name)(result, strict)), encoding="utf-8")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(summary_markdown(result) + "\n")


@handle_errors
def gate_command(
    baseline: Annotated[
        Path, typer.Option("--baseline", "-b", help="Report of the accepted model (committed).")
    ],
    candidate: Annotated[
        Path, typer.Option("--candidate", "-c", help="Report of the model under test.")
    ],
    policy: Annotated[
        Path | None,
        typer.Option(help="Policy TOML with tolerances and alpha (default: built-in policy)."),
    ] = None,
    summary: Annotated[
        Path | None, typer.Option(help="Write a markdown summary here (CI step summary).")
    ] = None,
    junit: Annotated[
        Path | None, typer.Option(help="Write JUnit XML here, one testcase per check.")
    ] = None,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--json",
            help="Write every check as JSON here (for `robench compare --format html --gate`).",
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 4 when a check is inconclusive.")
    ] = False,
) -> None:
    """Gate a candidate report against a baseline with paired tests; exit 1 on a regression.

    Every perturbation and metric of the baseline is a check. A drop within the policy's
    tolerance passes; beyond it, a one-sided paired test (exact McNemar on per-sample
    correctness) decides: significant at alpha -> regressed, otherwise inconclusive with an
    estimate of the samples needed. Aggregates over results are checks too (paired bootstrap
    over samples). Both reports must share suite, version and samples.
    Built-in policy: alpha 0.05; clean top1 may drop 1 pp, everything else 2 pp.

    Exit codes: 0 pass (or inconclusive without --strict), 1 regression, 2 bad input,
    4 inconclusive with --strict.

    Examples:
      robench gate --baseline reports/baselines/deit.json --candidate runs/deit.json
      robench gate -b base.json -c new.json --policy gate.toml --summary gate.md
      robench gate -b base.json -c new.json --junit gate.xml
      robench gate -b base.json -c new.json --json gate.json
      robench gate -b base.json -c new.json --strict
    """
    # Each file option names a format of GATE_FORMATS (its option is `--NAME`).
    paths = {"summary": summary, "junit": junit, "json": json_path}
    for name, path in paths.items():
        if path is not None:
            check_writable(path, f"--{name}", "gate" + GATE_FORMATS.get(name).suffixes[0])
    result = run_gate(read_report(baseline), read_report(candidate), read_policy(policy))
    if out.is_terminal:
        out.print(rich_table(result))
    else:
        typer.echo(markdown_table(result))
    _write_outputs(result, paths, strict)
    for note in result.notes:
        err.print(f"[yellow]note:[/] {escape(note)}", highlight=False)
    for check in result.checks:
        if check.status is not Status.passed:
            style = STATUS_STYLE[check.status]
            err.print(
                f"[{style}]{check.status.value}:[/] {escape(check.name)}: {escape(check.detail)}",
                highlight=False,
            )
    code = exit_code(result.status, strict)
    if result.status is Status.inconclusive and code == EXIT_OK:
        err.print(
            "[yellow]warning:[/] inconclusive checks do not fail the gate without --strict.",
            highlight=False,
        )
    err.print(
        f"gate {result.status.value}: {result.count(Status.regressed)} regressed, "
        f"{result.count(Status.inconclusive)} inconclusive, {result.count(Status.passed)} passed",
        highlight=False,
    )
    if code != EXIT_OK:
        raise typer.Exit(code)
