"""The `robench` command line: one module per subcommand, composed here.

Exit codes: 0 ok, 1 gate regression, 2 usage/config/input error, 3 runtime failure,
4 inconclusive gate under --strict, 130 interrupted.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated

import typer

from robench._core.version import __version__
from robench.cli import compare as compare_cmd
from robench.cli import demo as demo_cmd
from robench.cli import eval as eval_cmd
from robench.cli import gate as gate_cmd
from robench.cli import list as list_cmd
from robench.cli import schema as schema_cmd
from robench.cli import train as train_cmd
from robench.cli import validate as validate_cmd
from robench.cli._output import RobenchGroup, configure_logging

app = typer.Typer(
    name="robench",
    help="Measure how robust a trained PyTorch model is.\n\n"
    "Exit codes: 0 ok, 1 gate regression, 2 bad input, 3 runtime failure, 4 inconclusive gate"
    " (--strict), 130 interrupted.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    cls=RobenchGroup,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"robench {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only errors on stderr.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print robench's version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    configure_logging(debug=debug, quiet=quiet)


def reflowed_help(doc: str | None) -> str:
    """A command's docstring as help text that the terminal, not the source, wraps.

    Docstrings are wrapped at 100 columns for the source; Typer keeps those line breaks, so at
    80 columns sentences would break twice. Prose paragraphs become one line each; a paragraph
    that starts with "Examples:" keeps one command per line.
    """
    paragraphs = inspect.cleandoc(doc or "").split("\n\n")
    return "\n\n".join(
        p if p.startswith("Examples:") else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


_COMMANDS: dict[str, Callable[..., None]] = {
    "eval": eval_cmd.eval_command,
    "compare": compare_cmd.compare_command,
    "gate": gate_cmd.gate_command,
    "list": list_cmd.list_command,
    "validate": validate_cmd.validate_command,
    "schema": schema_cmd.schema_command,
    "train": train_cmd.train_command,
    "demo": demo_cmd.demo_command,
}
for _name, _command in _COMMANDS.items():
    app.command(_name, help=reflowed_help(_command.__doc__))(_command)


def main() -> None:
    app()
