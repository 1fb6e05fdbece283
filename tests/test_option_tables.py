"""Every command's options come from one table of rows (robench/cli/_option_table.py): the
typer signature is the table's, each flag shows in the command's help, a required row is
required, and a number outside its flag's range never reaches the command."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench.cli import app
from robench.cli._option_table import REQUIRED, Opt, with_options

# Command -> its module and table (eval's rows are drawn from the evaluation options' table).
TABLES = {
    "train": ("robench.cli.train", "TRAIN_OPTIONS"),
    "gate": ("robench.cli.gate", "GATE_OPTIONS"),
    "compare": ("robench.cli.compare", "COMPARE_OPTIONS"),
    "sweep": ("robench.cli.sweep", "SWEEP_OPTIONS"),
}


def _rows(command: str) -> tuple[Opt, ...]:
    module, table = TABLES[command]
    return tuple(getattr(importlib.import_module(module), table))


@pytest.mark.parametrize("command", TABLES)
def test_the_signature_typer_reads_is_the_table(command: str) -> None:
    module = importlib.import_module(TABLES[command][0])
    function = getattr(module, f"{command}_command")
    parameters = inspect.signature(function).parameters
    rows = _rows(command)
    assert list(parameters) == [row.name for row in rows]
    assert [p.default for p in parameters.values()] == [row.default for row in rows]


@pytest.mark.parametrize("command", TABLES)
def test_every_flag_of_the_table_is_in_the_help(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    shown = [row for row in _rows(command) if row.flags and not row.extra.get("hidden")]
    assert {row.flags[0].split("/")[0] for row in shown} <= set(result.output.split())


def _probe() -> tuple[typer.Typer, list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []

    @with_options(
        Opt("report", str, REQUIRED, "A required option."),
        Opt("batch_size", int, 64, "A number with a range (--batch-size).", "-b"),
        Opt("note", str, None, "Optional text."),
    )
    def probe(**given: Any) -> None:
        calls.append(given)

    probe_app = typer.Typer()
    probe_app.command()(probe)
    return probe_app, calls


def test_rows_become_a_command_with_their_defaults_and_a_required_option() -> None:
    probe_app, calls = _probe()
    assert CliRunner().invoke(probe_app, ["--report", "r.json", "-b", "8"]).exit_code == 0
    assert calls == [{"report": "r.json", "batch_size": 8, "note": None}]
    missing = CliRunner().invoke(probe_app, ["-b", "8"])
    assert missing.exit_code == 2 and "--report" in missing.output and len(calls) == 1


def test_a_number_out_of_its_range_never_reaches_the_command() -> None:
    probe_app, calls = _probe()
    result = CliRunner().invoke(probe_app, ["--report", "r.json", "--batch-size", "0"])
    assert isinstance(result.exception, ConfigError)
    assert "--batch-size 0 is out of range" in str(result.exception)
    assert calls == []
