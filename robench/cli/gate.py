"""`robench gate`: fail CI when a candidate's robustness regressed against a baseline; besides
the exit code it writes what CI systems show (robench/cli/_gate_outputs.py, docs/ci.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from robench._core.errors import EXIT_OK, ConfigError
from robench._core.overwrite_guard import refuse_overwriting_inputs
from robench.cli._gate_outputs import (
    GateOutput,
    check_writable_outputs,
    gate_outputs,
    output_help,
    parse_output,
    write_outputs,
)
from robench.cli._option_table import REQUIRED, Opt, with_options
from robench.cli._output import err, handle_errors, out, table_width
from robench.cli._registry_options import plugin_imports
from robench.results.gate.checks import policy_text
from robench.results.gate.formats import STATUS_STYLE
from robench.results.gate.policy import Policy, read_policy
from robench.results.gate.regression import GateResult, Status, exit_code, run_gate
from robench.results.report.schema import Report, check_writable, read_report

_DEFAULT_CANDIDATE = Path("runs/gate/candidate.json")


def _gate(baseline: Report, policy: Policy, given: dict[str, Any]) -> GateResult:
    """The fixed-n gate of two reports, or the sequential gate of a model."""
    candidate = given["candidate"]
    if not given["sequential"]:
        assert candidate is not None  # _check_options refused a missing --candidate
        return run_gate(baseline, read_report(candidate), policy)
    from robench.cli._progress import make_progress
    from robench.evaluation.gate_run import Candidate, run_sequential_gate

    found = Candidate(
        given["candidate_model"],
        given["checkpoint"],
        candidate or _DEFAULT_CANDIDATE,
        device=given["device"],
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


# `robench gate`'s options, one row each (robench/cli/_option_table.py).
GATE_OPTIONS = (
    Opt("baseline", Path, REQUIRED, "Report of the accepted model (committed).", "-b"),
    Opt("candidate", Path, None,
        "Report of the model under test (with --sequential: where its report goes).", "-c"),
    Opt("policy", Path, None, "Policy TOML with tolerances and alpha (default: built-in policy)."),
    Opt("summary", Path, None, "Write a markdown summary here (CI step summary)."),
    Opt("junit", Path, None, "Write JUnit XML here, one testcase per check."),
    Opt("json_path", Path, None,
        "Write every check as JSON here (for `robench compare --format html --gate`).",
        flag="--json"),
    Opt("strict", bool, False, "Exit 4 when a check is inconclusive."),
    Opt("sequential", bool, False,
        "Evaluate --candidate-model on the baseline's suite and samples, in a seeded random "
        "order, only until sequential paired tests settle the verdict."),
    Opt("candidate_model", str, None,
        "With --sequential: the model to evaluate (name, card or source)."),
    Opt("checkpoint", Path, None, "With --sequential: the candidate's checkpoint."),
    Opt("device", str, "auto",
        "With --sequential: auto (cuda when available), cpu, cuda or cuda:N."),
    # NAME is checked against GATE_FORMATS once --import has registered a plugin's.
    Opt("output", list[GateOutput], None, output_help(), "-o", metavar="NAME=PATH",
        extra={"parser": parse_output}),
    Opt("imports", list[str], None,
        "Module or .py file that registers gate formats (repeatable).",
        flag="--import", extra=plugin_imports()),
)  # fmt: skip


@handle_errors
@with_options(*GATE_OPTIONS)
def gate_command(**given: Any) -> None:
    """Gate a candidate report against a baseline with paired tests; exit 1 on a regression.

    Every perturbation and metric of the baseline is a check. A drop within the policy's
    tolerance passes; beyond it, a one-sided paired test (exact McNemar on per-sample
    correctness) decides: significant at alpha -> regressed, otherwise inconclusive with an
    estimate of the samples needed. Aggregates over results are checks too (paired bootstrap
    over samples). Both reports must share suite, version and samples.
    Built-in policy: {policy}.

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
    candidate, sequential, model = given["candidate"], given["sequential"], given["candidate_model"]
    _check_options(candidate, sequential, model, given["checkpoint"])
    # Each file option names a format of GATE_FORMATS (its option is `--NAME`).
    named = {"summary": given["summary"], "junit": given["junit"], "json": given["json_path"]}
    files = gate_outputs(named, given["output"])
    inputs: dict[str, Path | None] = {
        "--baseline": given["baseline"],
        "--policy": given["policy"],
        "--checkpoint": given["checkpoint"],
        "--candidate-model": Path(model) if model else None,
    }
    if not sequential:
        inputs["--candidate"] = candidate
    baseline = read_report(given["baseline"])
    sequential_out = (candidate or _DEFAULT_CANDIDATE) if sequential else None
    _check_outputs(files, inputs, baseline, sequential_out)
    result = _gate(baseline, read_policy(given["policy"]), given)
    code = _show(result, files, given["strict"])
    if code != EXIT_OK:
        raise typer.Exit(code)


def _show(result: GateResult, files: list[GateOutput], strict: bool) -> int:
    """Show the verdict (table on stdout, notes and failed checks on stderr), write the files;
    return the exit code."""
    from robench.results.gate.tables import RichGate, markdown_fitting

    if out.is_terminal:
        out.print(RichGate(result))
    else:
        typer.echo(markdown_fitting(result, table_width()))
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
    return code


# The built-in policy in words, from the policy and the metric registry (each metric's
# `gate_tolerance`), so the help stays true when a tolerance changes.
gate_command.__doc__ = (gate_command.__doc__ or "").replace("{policy}", policy_text(Policy()))
