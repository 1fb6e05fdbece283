"""The CLI's two streams, its error policy and its root group.

stdout carries results only (tables, JSON); logs, warnings and progress go to stderr through
one rich console. A `RobenchError` becomes one red line and its exit code; a traceback only
with `--debug`.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

from robench._core.errors import EXIT_BROKEN_PIPE, EXIT_RUNTIME, EXIT_USAGE, RobenchError
from robench.cli._commands import COMMANDS
from robench.cli._lazy import LazyGroup
from robench.evaluation.interrupts import Interrupted

out = Console(soft_wrap=True)
err = Console(stderr=True)
# The width a table printed to a pipe or a log must fit, unless COLUMNS says otherwise.
PIPED_WIDTH = 120


def table_width() -> int:
    """The width stdout's tables fit: the terminal's; when piped, COLUMNS or `PIPED_WIDTH`."""
    if out.is_terminal:
        return out.width
    columns = os.environ.get("COLUMNS", "")
    return max(40, int(columns)) if columns.isdigit() else PIPED_WIDTH


_state = {"debug": False}
F = TypeVar("F", bound=Callable[..., Any])


class LineHandler(logging.Handler):
    """A log record as one line on stderr (`warning: ...`), never wrapped: what pipes and CI
    logs get, where rich's wrapped columns would turn one warning into five lines."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = f"{record.levelname.lower()}: {record.getMessage()}"
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            err.print(text, highlight=False, markup=False, soft_wrap=True)
        except Exception:
            self.handleError(record)


def configure_logging(*, debug: bool, quiet: bool) -> None:
    _state["debug"] = debug
    level = logging.DEBUG if debug else logging.ERROR if quiet else logging.INFO
    root = logging.getLogger("robench")
    root.handlers.clear()
    if err.is_terminal:
        # Imported here: rich.logging brings rich.traceback, which `--help` and `--version` skip.
        from rich.logging import RichHandler

        root.addHandler(RichHandler(console=err, show_time=False, show_path=debug, markup=False))
    else:
        root.addHandler(LineHandler())
    root.setLevel(level)
    root.propagate = False


def fail(message: str, code: int) -> typer.Exit:
    # One line whatever the message quotes: a path or value the user gave may hold a newline.
    line = message.replace("\r", "\\r").replace("\n", "\\n")
    err.print(f"[bold red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


# What a command's stray positional argument most likely meant (a command that takes none).
_EXTRA_ARGUMENT_HINTS = {
    "robench gate": "the report under test is given as --candidate (-c) PATH",
}


def _usage_message(exc: UsageError) -> str:
    """Click's usage error as one sentence, with the likely fix for a stray argument."""
    path = exc.ctx.command_path if exc.ctx else "robench"
    message = exc.format_message().replace("Value error, ", "").rstrip(".")
    hint = _EXTRA_ARGUMENT_HINTS.get(path)
    if hint and "unexpected extra argument" in message:
        message = f"{message}: {hint}"
    return f"{message}; see `{path} --help`."


class RobenchGroup(LazyGroup):
    """The `robench` command group (`COMMANDS`, each imported when first used); a bad option
    or argument is one `error:` sentence pointing at `--help` and exit 2, not typer's panel."""

    commands_table = COMMANDS

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except NoArgsIsHelpError:
            # The help is already on stdout: typer's renderer and the root group's print it
            # while the error is built. Running again in standalone mode would print it twice.
            raise SystemExit(EXIT_USAGE) from None
        except UsageError as exc:
            raise SystemExit(fail(_usage_message(exc), EXIT_USAGE).exit_code) from None
        except ClickException as exc:
            raise SystemExit(fail(exc.format_message(), exc.exit_code).exit_code) from None
        except typer.Abort:
            err.print("aborted.")
            raise SystemExit(1) from None
        sys.exit(code if isinstance(code, int) else 0)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises no second BrokenPipeError."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def handle_errors(func: F) -> F:
    """Turn robench errors into one line and an exit code; keep tracebacks for --debug."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RobenchError as exc:
            if _state["debug"]:  # the traceback, and still the documented exit code
                err.print(traceback.format_exc(), markup=False, highlight=False, end="")
            raise fail(str(exc), exc.exit_code) from None
        except Interrupted as exc:  # a run stopped by a signal (robench.evaluation.interrupts)
            if exc.message:
                err.print(
                    f"[yellow]interrupted[/]: {escape(exc.message)}",
                    highlight=False,
                    soft_wrap=True,
                )
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err.print("[yellow]interrupted[/]: finished batches are saved; rerun with --resume.")
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort):
            raise
        except BrokenPipeError:
            # The reader of stdout went away (`robench list suites | head`): stop quietly, as
            # `cat` does, instead of a runtime error. Reports already written stay written.
            _silence_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except Exception as exc:
            if _state["debug"]:
                err.print(traceback.format_exc(), markup=False, highlight=False, end="")
            raise fail(
                f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for the traceback).",
                EXIT_RUNTIME,
            ) from None

    return wrapper  # type: ignore[return-value]
