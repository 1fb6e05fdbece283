"""`robench gate`: fail CI when a candidate's robustness regressed against a baseline.

Besides the exit code, the gate writes what CI systems show: a markdown summary (`--summary`,
and appended to `$GITHUB_STEP_SUMMARY` when set), JUnit XML with one testcase per check and a
JSON summary (`--json`, read back by `robench compare --format html --gate`), all rendered by
`robench.results.gate.formats`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from robench._core.errors import EXIT_OK, ConfigError
from robench.cli._output import err, handle_errors, out
from robench.results.gate.formats import (
    GATE_FORMATS,
    STATUS_STYLE,
    markdown_table,
    rich_table,
    summary_markdown,
)
from robench.results.gate.policy import Policy, read_policy
from robench.results.gate.regression import GateResult, Status, exit_code, run_gate
from robench.results.report.schema import check_writable, read_report


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


def _gate(
    baseline: Path,
    candidate: Path | None,
    policy: Policy,
    sequential: bool,
    model: str | None,
    checkpoint: Path | None,
    device: str,
) -> GateResult:
    """The fixed-n gate of two reports, or the sequential gate of a model."""
    if not sequential:
        if candidate is None:
            raise ConfigError(
                "gate needs the candidate's report: pass --candidate REPORT (or --sequential "
                "--candidate-model MODEL to evaluate a model)."
            )
        if model is not None or checkpoint is not None:
            raise ConfigError(
                "--candidate-model and --checkpoint are for --sequential, which evaluates the "
                "model; pass --sequential, or drop them to gate --candidate's report."
            )
        return run_gate(read_report(baseline), read_report(candidate), policy)
    if model is None and checkpoint is None:
        raise ConfigError(
            "--sequential evaluates the candidate model; pass --candidate-model MODEL (and "
            "--checkpoint FILE for a model without built-in weights)."
        )
    from robench.cli._progress import make_progress
    from robench.evaluation.gate_run import Candidate, run_sequential_gate

    out_path = candidate or Path("runs/gate/candidate.json")
    check_writable(out_path)
    found = Candidate(
        model, checkpoint, out_path, device=device, command=["robench", *sys.argv[1:]]
    )
    return run_sequential_gate(read_report(baseline), policy, found, make_progress())


@handle_errors
def gate_command(  # long: 49 lines of typer options and 25 of help; the code is 34
    baseline: Annotated[
        Path, typer.Option("--baseline", "-b", help="Report of the accepted model (committed).")
    ],
    candidate: Annotated[
        Path | None,
        typer.Option(
            "--candidate",
            "-c",
            help="Report of the model under test (with --sequential: where its report goes).",
        ),
    ] = None,
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
    sequential: Annotated[
        bool,
        typer.Option(
            "--sequential",
            help="Evaluate --candidate-model on the baseline's suite and samples, in a seeded "
            "random order, only until sequential paired tests settle the verdict.",
        ),
    ] = False,
    candidate_model: Annotated[
        str | None,
        typer.Option(help="With --sequential: the model to evaluate (name, card or source)."),
    ] = None,
    checkpoint: Annotated[
        Path | None, typer.Option(help="With --sequential: the candidate's checkpoint.")
    ] = None,
    device: Annotated[str, typer.Option(help="With --sequential: cpu, cuda or cuda:N.")] = "cpu",
) -> None:
    """Gate a candidate report against a baseline with paired tests; exit 1 on a regression.

    Every perturbation and metric of the baseline is a check. A drop within the policy's
    tolerance passes; beyond it, a one-sided paired test (exact McNemar on per-sample
    correctness) decides: significant at alpha -> regressed, otherwise inconclusive with an
    estimate of the samples needed. Aggregates over results are checks too (paired bootstrap
    over samples). Both reports must share suite, version and samples.
    Built-in policy: alpha 0.05; clean top1 may drop 1 pp, everything else 2 pp.

    With --sequential the gate evaluates the candidate model itself, chunk by chunk, and
    stops once one top1/top5 check has regressed or all have passed (anytime-valid paired
    betting tests at alpha / checks; docs/ci.md, "Sequential gate").

    Exit codes: 0 pass (or inconclusive without --strict), 1 regression, 2 bad input,
    4 inconclusive with --strict.

    Examples:
      robench gate --baseline reports/baselines/deit.json --candidate runs/deit.json
      robench gate -b base.json -c new.json --policy gate.toml --summary gate.md
      robench gate -b base.json -c new.json --junit gate.xml
      robench gate -b base.json -c new.json --json gate.json
      robench gate -b base.json -c new.json --strict
      robench gate --sequential -b base.json --candidate-model vit_nano_elliptical_fmnist
    """
    # Each file option names a format of GATE_FORMATS (its option is `--NAME`).
    paths = {"summary": summary, "junit": junit, "json": json_path}
    for name, path in paths.items():
        if path is not None:
            check_writable(path, f"--{name}", "gate" + GATE_FORMATS.get(name).suffixes[0])
    result = _gate(
        baseline, candidate, read_policy(policy), sequential, candidate_model, checkpoint, device
    )
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
