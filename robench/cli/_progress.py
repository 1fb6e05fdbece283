"""Progress of long runs on stderr: a live bar on a terminal, plain timed lines elsewhere."""

from __future__ import annotations

import time

from robench._core.progress_bar import BarProgress
from robench.cli._output import err

# The least time between two progress lines on a pipe; the gap grows with the run (a quarter
# of the time elapsed), so an hour-long run writes about 15 lines, not 60.
HEARTBEAT_S = 60.0


class LineProgress:
    """The runner's progress protocol as a few plain lines on stderr, for CI logs and pipes:
    one when the first step starts, one when a step starts `HEARTBEAT_S` (and a quarter of the
    time elapsed) after the last line, so a slow run is visibly not stuck, and a summary at
    `close`; a run of many quick steps writes two lines, not two per step."""

    def __init__(self) -> None:
        self._started = time.perf_counter()
        self._last_line: float | None = None
        self._steps = self._samples = 0

    def _line(self, text: str) -> None:
        now = time.perf_counter()
        self._last_line = now
        err.print(
            f"[{now - self._started:7.1f}s] {text}", highlight=False, markup=False, soft_wrap=True
        )

    def _due(self) -> bool:
        if self._last_line is None:
            return True
        now = time.perf_counter()
        return now - self._last_line >= max(HEARTBEAT_S, (now - self._started) / 4)

    def start(self, name: str, total: int, done: int) -> None:
        if self._due():
            resumed = f", {done} already done" if done else ""
            finished = f" ({self._steps} steps done)" if self._steps else ""
            self._line(f"{name}: {total} samples{resumed} ...{finished}")
        self._samples += total - done

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        self._steps += 1

    def close(self) -> None:
        if self._steps:
            took = time.perf_counter() - self._started
            self._line(f"{self._steps} steps ({self._samples} samples) done in {took:.1f}s")


def make_progress() -> BarProgress | LineProgress:
    """A live bar on a terminal; a few plain lines with elapsed time anywhere else."""
    return BarProgress(err) if err.is_terminal else LineProgress()
