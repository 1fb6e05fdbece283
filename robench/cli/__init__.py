"""The `robench` command line: one module per subcommand (listed in `_commands.py`), composed
here; a subcommand's module is imported only when that command is used. Exit codes: the
root help below.

May import: every other part but `robench.registry` (`robench.evaluation`,
`robench.training`, `robench.tasks`, `robench.perturbations`, `robench.diagnostics`,
`robench.models`, `robench.data`, `robench.results`, `robench._core`), its heavy ones inside
the command functions, so that the light commands stay free of torch.
"""

from __future__ import annotations

from typing import Annotated

import typer

from robench._core.version import __version__
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


def main() -> None:
    app()
