"""The files `robench gate` writes: each one format of `GATE_FORMATS` at one path.

`--summary`, `--junit` and `--json` name robench's own formats; `--output NAME=PATH`
(repeatable) names any registered gate format, a plugin's included. A (format, path) pair per
file, because the gate writes several in one run; `--format NAME -o PATH`, as compare and eval
have, would write one only. Every file is checked before the gate runs (writable, not an input,
not another output) and rendered before the first is written: a failed rendering leaves none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import typer

from robench._core.plugins import FORMAT_ENTRY_POINT_GROUP
from robench.cli._registry_options import registry_choice
from robench.results.gate.formats import GATE_FORMATS, summary_markdown
from robench.results.gate.regression import GateResult
from robench.results.report.schema import check_writable, write_text_atomic


@dataclass(frozen=True)
class GateOutput:
    """One file the gate writes: a format of GATE_FORMATS, its path, the option asking for it."""

    name: str
    path: Path
    option: str


# Checks NAME against GATE_FORMATS as `compare --format` is checked: after the eager
# --import, and loading installed plugins' entry points for a name robench does not have.
_format_name = registry_choice(GATE_FORMATS, FORMAT_ENTRY_POINT_GROUP)


def parse_output(value: str) -> GateOutput:
    """The parser of `--output NAME=PATH` (split at the first `=`, so PATH may hold one)."""
    name, equals, path = value.partition("=")
    if not equals or not name or not path:
        raise typer.BadParameter(
            f"{value!r} is not NAME=PATH (a gate format and a file, e.g. summary=gate.md)."
        )
    return GateOutput(_format_name(name), Path(path), "--output")


def output_help() -> str:
    """The help of `--output`, naming the formats registered when the command is built."""
    names = ", ".join(GATE_FORMATS.names())
    return (
        f"Write the gate format NAME ({names}, or a plugin's: --import) to PATH; repeatable. "
        "--output summary=gate.md is --summary gate.md."
    )


def gate_outputs(
    own: Mapping[str, Path | None], extra: list[GateOutput] | None
) -> list[GateOutput]:
    """Every file asked for: `own` (format NAME -> the path of `--NAME`), then `--output`'s."""
    given = [GateOutput(name, path, f"--{name}") for name, path in own.items() if path]
    return given + list(extra or [])


def check_writable_outputs(outputs: list[GateOutput]) -> None:
    """Refuse, before the gate runs, a path that is a directory or cannot be written."""
    for output in outputs:
        suffixes = GATE_FORMATS.get(output.name).suffixes
        check_writable(output.path, output.option, "gate" + (suffixes[0] if suffixes else ".txt"))


def write_outputs(result: GateResult, outputs: list[GateOutput], strict: bool) -> None:
    """Render every file, then write them; the summary also goes to `$GITHUB_STEP_SUMMARY`
    when set (GitHub Actions shows it on the run's page)."""
    texts = [str(GATE_FORMATS.get(o.name)(result, strict)) for o in outputs]
    for output, text in zip(outputs, texts, strict=True):
        write_text_atomic(output.path, text)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(summary_markdown(result) + "\n")
