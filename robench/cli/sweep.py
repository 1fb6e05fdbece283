"""`robench sweep`: run a plan of models x suites x seeds as `robench eval` jobs, show their
status, collect the leaderboards."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from robench._core.errors import EXIT_RUNTIME, ConfigError
from robench.cli._option_table import REQUIRED, Opt, with_options
from robench.cli._output import err, handle_errors, out

if TYPE_CHECKING:
    from robench.evaluation.sweeps.leaderboard import Leaderboards
    from robench.evaluation.sweeps.sweep import JobStatus, LoadedSweep

Options = Mapping[str, Any]  # the command's options, by keyword (SWEEP_OPTIONS)
_COLOURS = {"done": "green", "running": "cyan", "failed": "red", "pending": "", "changed": "yellow"}


def _print_status(statuses: list[JobStatus], as_json: bool) -> None:
    rows = [
        {
            "job": s.job.job_id,
            "status": s.status,
            "detail": s.detail,
            "log": str(s.job.log) if s.job.log.exists() else "",
        }
        for s in statuses
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    counts = {name: sum(row["status"] == name for row in rows) for name in _COLOURS}
    if out.is_terminal:
        from rich.table import Table

        table = Table("job", "status", "detail", "log", title="sweep jobs")
        for row in rows:
            colour = _COLOURS[row["status"]]
            shown = f"[{colour}]{row['status']}[/]" if colour else row["status"]
            table.add_row(escape(row["job"]), shown, escape(row["detail"]), escape(row["log"]))
        out.print(table)
    else:
        typer.echo("| job | status | detail | log |\n|---|---|---|---|")
        for row in rows:
            cells = [row[key].replace("|", "\\|") for key in ("job", "status", "detail", "log")]
            typer.echo("| " + " | ".join(cells) + " |")
    summary = ", ".join(f"{n} {name}" for name, n in counts.items() if n)
    err.print(f"{len(rows)} jobs: {summary}", highlight=False)


def _print_leaderboards(found: Leaderboards) -> None:
    for note in found.notes:
        err.print(f"[yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    for suite, table in found.tables.items():
        typer.echo(f"## {suite}\n\n{table.rstrip()}\n")
    for s in found.statuses:
        if s.status == "failed":
            err.print(
                f"[red]failed[/] {escape(s.job.job_id)}: {escape(s.detail)} "
                f"(log: {escape(str(s.job.log))})",
                highlight=False,
                soft_wrap=True,
            )
    if found.page is not None:
        err.print(f"leaderboard page: {escape(str(found.page))}", highlight=False)


def _run(sweep: LoadedSweep, given: Options) -> None:
    from robench.evaluation.sweeps.sweep import run_sweep

    run_sweep(sweep, overwrite=given["overwrite"], wait=given["wait"])
    if not given["wait"]:
        err.print("submitted; follow with `robench sweep status PLAN`", highlight=False)
        return
    if any(s.status != "done" for s in _collect(sweep, given)):
        raise typer.Exit(EXIT_RUNTIME)


def _status(sweep: LoadedSweep, given: Options) -> None:
    from robench.evaluation.sweeps.sweep import job_statuses

    _print_status(job_statuses(sweep), given["as_json"])


def _collect(sweep: LoadedSweep, given: Options) -> list[JobStatus]:
    from robench.evaluation.sweeps.leaderboard import collect

    found = collect(sweep, figures=given["figures"])
    _print_leaderboards(found)
    if given["as_json"]:
        _print_status(found.statuses, True)
    return found.statuses


# The actions of `robench sweep [ACTION] PLAN`; `run` when only a plan is given.
ACTIONS: dict[str, Callable[[LoadedSweep, Options], object]] = {
    "run": _run,
    "status": _status,
    "collect": _collect,
}


def _check_option_ranges(sweep: LoadedSweep) -> None:
    """Numbers in the plan's eval options, checked against `robench eval`'s ranges before any
    job starts (each job would refuse them itself, and the sweep would fail every job)."""
    from robench.evaluation.options.ranges import OPTION_RANGES, flag_of

    tables = [("[eval]", sweep.plan.eval)]
    tables += [(f"[[models]] {m.label}", m.options) for m in sweep.plan.models]
    for where, options in tables:
        for name, value in options.items():
            row = OPTION_RANGES.get(flag_of(name))
            items = value if isinstance(value, list) else [value]
            numbers = [v for v in items if isinstance(v, int | float) and not isinstance(v, bool)]
            if row is not None and any(number not in row for number in numbers):
                raise ConfigError(
                    f"{sweep.path}: {where} {name} = {value!r} is out of range: expected "
                    f"{row.describe()}; set e.g. {name} = {row.example}."
                )


def _action_and_plan(first: str, plan: Path | None) -> tuple[str, Path]:
    if plan is None:
        if first in ACTIONS:
            raise ConfigError(
                f"robench sweep {first} needs a plan: robench sweep {first} PLAN.toml."
            )
        return "run", Path(first)
    if first not in ACTIONS:
        raise ConfigError(
            f"unknown sweep action {first!r}; use one of {', '.join(ACTIONS)}, e.g. "
            f"robench sweep status {plan}."
        )
    return first, plan


# `robench sweep`'s options, one row each (robench/cli/_option_table.py).
SWEEP_OPTIONS = (
    Opt("action_or_plan", str, REQUIRED,
        "The plan file (.toml, docs/sweeps.md), after an action: run (the default), status or "
        "collect.", argument=True, metavar="[run|status|collect] PLAN"),
    Opt("plan", Path, None, argument=True, extra={"hidden": True}),
    Opt("executor", str, None, "Run with this executor instead of the plan's: local or slurm."),
    Opt("overwrite", bool, False,
        "Discard the results of jobs whose plan entry changed and run them again."),
    Opt("wait", bool, True,
        "Wait for the jobs and write the leaderboards (--no-wait: submit and return; slurm).",
        flag="--wait/--no-wait"),
    Opt("as_json", bool, False, "Print the jobs' status as JSON on stdout.", flag="--json"),
    Opt("figures", bool, False, "Also draw each suite's figures on the HTML page (matplotlib)."),
)  # fmt: skip


@handle_errors
@with_options(*SWEEP_OPTIONS)
def sweep_command(**given: Any) -> None:
    """Run many models x suites x seeds as resumable eval jobs; one leaderboard per suite.

    Each (model, suite, seed) of the plan is one `robench eval` job with a report path derived
    from the plan. Finished jobs are skipped, interrupted ones continue with --resume, a job
    whose plan entry changed is refused unless --overwrite. A failed job never stops the
    others; the sweep exits 3 when any job failed. Leaderboards (a compare table per suite and
    one HTML page linking every report) go to SWEEP/leaderboard/.

    Examples:
      robench sweep examples/sweep.toml
      robench sweep status examples/sweep.toml
      robench sweep collect examples/sweep.toml --figures
      robench sweep examples/sweep.toml --executor slurm --no-wait
      robench sweep examples/sweep.toml --overwrite
    """
    from robench.evaluation.sweeps.sweep import load_sweep

    action, plan_path = _action_and_plan(given["action_or_plan"], given["plan"])
    sweep = load_sweep(plan_path, given["executor"], check=action == "run")
    _check_option_ranges(sweep)
    ACTIONS[action](sweep, given)
