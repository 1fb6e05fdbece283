"""The CLI's two streams and its error policy.

stdout carries results only (tables, JSON); logs, warnings and progress go to stderr through
one rich console. A `RobenchError` becomes one red line and its exit code; a traceback only
with `--debug`.
"""

from __future__ import annotations

import functools
import logging
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

from robench.errors import EXIT_RUNTIME, RobenchError

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


def handle_errors(func: F) -> F:
    """Turn robench errors into one line and an exit code; keep tracebacks for --debug."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RobenchError as exc:
            if _state["debug"]:
                raise
            raise fail(str(exc), exc.exit_code) from None
        except KeyboardInterrupt:
            err.print("[yellow]interrupted[/]: finished batches are saved; rerun with --resume.")
            raise typer.Exit(130) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as exc:
            if _state["debug"]:
                raise
            raise fail(
                f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for the traceback).",
                EXIT_RUNTIME,
            ) from None

    return wrapper  # type: ignore[return-value]


class RichProgress:
    """The runner's progress protocol on a rich bar (stderr; silent when not a TTY)."""

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
