"""`robench gate`: fail CI when a candidate's robustness regressed against a baseline.

Besides the exit code, the gate writes what CI systems show: a markdown summary (`--summary`,
and appended to `$GITHUB_STEP_SUMMARY` when set), JUnit XML with one testcase per check and a
JSON summary (`--json`, read back by `robench compare --format html --gate`), all rendered by
`robench.results.gate.formats`, and any other registered gate format, a plugin's included
(`--import PLUGIN --output NAME=PATH`; robench/cli/_gate_outputs.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from robench._core.errors import EXIT_OK, ConfigError
from robench._core.overwrite_guard import refuse_overwriting_inputs
from robench._core.plugins import FORMAT_ENTRY_POINT_GROUP
from robench.cli._gate_outputs import (
    GateOutput,
    check_writable_outputs,
    gate_outputs,
    output_help,
    parse_output,
    write_outputs,
)
from robench.cli._output import err, handle_errors, out
from robench.cli._registry_options import import_plugins
from robench.results.gate.formats import STATUS_STYLE, markdown_table, rich_table
from robench.results.gate.policy import Policy, read_policy
from robench.results.gate.regression import GateResult, Status, exit_code, run_gate
from robench.results.report.schema import Report, check_writable, read_report

_DEFAULT_CANDIDATE = Path("runs/gate/candidate.json")


def _gate(
    baseline: Report,
    candidate: Path | None,
    policy: Policy,
    sequential: bool,
    model: str | None,
    checkpoint: Path | None,
    device: str,
) -> GateResult:
    """The fixed-n gate of two reports, or the sequential gate of a model."""
    if not sequential:
        assert candidate is not None  # _check_options refused a missing --candidate
        return run_gate(baseline, read_report(candidate), policy)
    from robench.cli._progress import make_progress
    from robench.evaluation.gate_run import Candidate, run_sequential_gate

    found = Candidate(
        model,
        checkpoint,
        candidate or _DEFAULT_CANDIDATE,
        device=device,
        command=["robench", *sys.argv[1:]],
    )
    return run_sequential_gate(baseline, policy, found, make_progress())


def _check_options(
    candidate: Path | None, sequential: bool, model: str | None, checkpoint: Path | None
) -> None:
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
    elif model is None and checkpoint is None:
        raise ConfigError(
            "--sequential evaluates the candidate model; pass --candidate-model MODEL (and "
            "--checkpoint FILE for a model without built-in weights)."
        )


def _check_outputs(
    files: list[GateOutput],
    inputs: dict[str, Path | None],
    baseline: Report,
    sequential_out: Path | None,
) -> None:
    """Refuse, before any work, a file the gate writes that is one it reads (or another
    output): `-c base.json` with --sequential would replace the baseline by the candidate."""
    outputs: list[tuple[str, Path | None]] = []
    if sequential_out is not None:  # first, so a clash with another output names that one
        from robench.evaluation.store.sample_store import samples_path_for

        outputs += [
            ("--candidate", sequential_out),
            ("--candidate's samples file", samples_path_for(sequential_out)),
        ]
        # What the candidate's evaluation reads: the baseline's suite file and data.
        inputs["the baseline's suite"] = Path(baseline.suite.path) if baseline.suite.path else None
        for name, info in baseline.datasets.items():
            inputs[f"the baseline's data {name}"] = Path(info.path) if info.path else None
    outputs += [(file.option, file.path) for file in files]
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    outputs.append(("$GITHUB_STEP_SUMMARY", Path(step_summary) if step_summary else None))
    refuse_overwriting_inputs(outputs, inputs, "the gate")
    check_writable_outputs(files)
    if sequential_out is not None:
        check_writable(sequential_out, "--candidate")


@handle_errors
def gate_command(  # long: 69 lines of typer options and 30 of help; the code is 34
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
    device: Annotated[
        str,
        typer.Option(help="With --sequential: auto (cuda when available), cpu, cuda or cuda:N."),
    ] = "auto",
    output: Annotated[
        list[GateOutput] | None,
        typer.Option(
            "--output",
            "-o",
            # NAME is checked against GATE_FORMATS once --import has registered a plugin's.
            parser=parse_output,
            metavar="NAME=PATH",
            help=output_help(),
        ),
    ] = None,
    imports: Annotated[
        list[str] | None,
        typer.Option(
            "--import",
            is_eager=True,  # loaded before --output's NAME is checked, wherever it stands
            callback=import_plugins((FORMAT_ENTRY_POINT_GROUP,)),
            help="Module or .py file that registers gate formats (repeatable).",
        ),
    ] = None,
) -> None:
    """Gate a candidate report against a baseline with paired tests; exit 1 on a regression.

    Every perturbation and metric of the baseline is a check. A drop within the policy's
    tolerance passes; beyond it, a one-sided paired test (exact McNemar on per-sample
    correctness) decides: significant at alpha -> regressed, otherwise inconclusive with an
    estimate of the samples needed. Aggregates over results are checks too (paired bootstrap
    over samples). Both reports must share suite, version and samples.
    Built-in policy: alpha 0.05; clean top1 may drop 1 pp, everything else 2 pp.

    --summary, --junit and --json write robench's own formats; --output NAME=PATH writes any
    registered gate format (repeatable: the gate writes several files in one run, a format and
    a path each), a plugin's too (--import; docs/extending.md).

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
      robench gate -b base.json -c new.json --import my_formats.py --output mine=gate.mine
      robench gate --sequential -b base.json --candidate-model vit_nano_elliptical_fmnist
    """
    _check_options(candidate, sequential, candidate_model, checkpoint)
    # Each file option names a format of GATE_FORMATS (its option is `--NAME`).
    files = gate_outputs({"summary": summary, "junit": junit, "json": json_path}, output)
    inputs: dict[str, Path | None] = {
        "--baseline": baseline,
        "--policy": policy,
        "--checkpoint": checkpoint,
        "--candidate-model": Path(candidate_model) if candidate_model else None,
    }
    if not sequential:
        inputs["--candidate"] = candidate
    base_report = read_report(baseline)
    sequential_out = (candidate or _DEFAULT_CANDIDATE) if sequential else None
    _check_outputs(files, inputs, base_report, sequential_out)
    result = _gate(
        base_report, candidate, read_policy(policy), sequential, candidate_model, checkpoint, device
    )
    if out.is_terminal:
        out.print(rich_table(result))
    else:
        typer.echo(markdown_table(result))
    write_outputs(result, files, strict)
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
