"""The CLI's two streams and its error policy.

stdout carries results only (tables, JSON); logs, warnings and progress go to stderr through
one rich console. A `RobenchError` becomes one red line and its exit code; a traceback only
with `--debug`.
"""

from __future__ import annotations

import functools
import logging
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from robench._core.errors import EXIT_RUNTIME, EXIT_USAGE, RobenchError
from robench.evaluation.interrupts import Interrupted

out = Console(soft_wrap=True)
err = Console(stderr=True)

_state = {"debug": False}
F = TypeVar("F", bound=Callable[..., Any])


def configure_logging(*, debug: bool, quiet: bool) -> None:
    _state["debug"] = debug
    level = logging.DEBUG if debug else logging.ERROR if quiet else logging.INFO
    root = logging.getLogger("robench")
    root.handlers.clear()
    root.addHandler(RichHandler(console=err, show_time=False, show_path=debug, markup=False))
    root.setLevel(level)
    root.propagate = False


def fail(message: str, code: int) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


class RobenchGroup(TyperGroup):
    """The `robench` command group; a bad option or argument is one `error:` line, exit 2.

    Typer shows a usage error as a boxed panel under the usage line; robench answers it like
    every other bad input: one sentence naming the value and pointing at `--help`.
    """

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
            return super().main(args, prog_name, complete_var, standalone_mode=True, **extra)
        except UsageError as exc:
            where = f"`{exc.ctx.command_path} --help`" if exc.ctx else "`robench --help`"
            message = exc.format_message().replace("Value error, ", "").rstrip(".")
            raise SystemExit(fail(f"{message}; see {where}.", EXIT_USAGE).exit_code) from None
        except ClickException as exc:
            raise SystemExit(fail(exc.format_message(), exc.exit_code).exit_code) from None
        except typer.Abort:
            err.print("aborted.")
            raise SystemExit(1) from None
        sys.exit(code if isinstance(code, int) else 0)


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
        except Exception as exc:
            if _state["debug"]:
                err.print(traceback.format_exc(), markup=False, highlight=False, end="")
            raise fail(
                f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for the traceback).",
                EXIT_RUNTIME,
            ) from None

    return wrapper  # type: ignore[return-value]


class RichProgress:
    """The runner's progress protocol on a rich bar (stderr, for a terminal)."""

    def __init__(self) -> None:
        self._progress = Progress(
            TextColumn("{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=err,
            disable=not err.is_terminal,
            transient=False,
        )
        self._task: TaskID | None = None

    def start(self, name: str, total: int, done: int) -> None:
        self._progress.start()
        self._task = self._progress.add_task(name, total=total, completed=done)

    def advance(self, n: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, n)

    def finish(self) -> None:
        self._progress.stop()


class LineProgress:
    """The runner's progress protocol as plain lines on stderr, for CI logs and pipes.

    Each step (one perturbation) prints a line when it starts and one when it ends, with the
    time elapsed since the command started: never silence, never a wall of bar redraws.
    """

    def __init__(self) -> None:
        self._started = time.perf_counter()
        self._step_started = self._started
        self._name = ""
        self._total = self._done = 0

    def _line(self, text: str) -> None:
        elapsed = time.perf_counter() - self._started
        err.print(f"[{elapsed:7.1f}s] {text}", highlight=False, markup=False, soft_wrap=True)

    def start(self, name: str, total: int, done: int) -> None:
        self._name, self._total, self._done = name, total, done
        self._step_started = time.perf_counter()
        resumed = f" ({done} already done)" if done else ""
        self._line(f"{name}: {total} samples{resumed} ...")

    def advance(self, n: int) -> None:
        self._done += n

    def finish(self) -> None:
        took = time.perf_counter() - self._step_started
        self._line(f"{self._name}: {self._done}/{self._total} done in {took:.1f}s")


def make_progress() -> RichProgress | LineProgress:
    """A live bar on a terminal; plain lines with elapsed time anywhere else."""
    return RichProgress() if err.is_terminal else LineProgress()
