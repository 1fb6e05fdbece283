"""Progress of long runs on stderr: a live bar on a terminal, plain timed lines elsewhere."""

from __future__ import annotations

import time

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from robench.cli._output import err


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
