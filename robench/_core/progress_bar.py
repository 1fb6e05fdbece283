"""The runner's progress protocol (`robench._core.progress.Progress`) as a rich bar: what the
CLI draws on a terminal's stderr and `robench.evaluate` draws in a terminal or a notebook."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class BarProgress:
    """One bar per step (a perturbation, reading images) on `console`; each bar stays."""

    def __init__(self, console: Console, *, disable: bool = False) -> None:
        self._progress = Progress(
            TextColumn("{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=disable,
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

    def close(self) -> None:
        """Nothing to add: each bar stays where it was drawn."""
