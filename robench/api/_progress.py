"""Progress of `robench.evaluate`: a rich bar in a terminal or a Jupyter notebook (rich draws
both), and log records (INFO, `robench.api`) anywhere else; the library never prints."""

from __future__ import annotations

import logging
import time
from importlib.util import find_spec

from rich.console import Console

from robench._core.progress import Progress as ProgressProtocol
from robench._core.progress_bar import BarProgress

logger = logging.getLogger("robench.api")


class LogProgress:
    """The runner's progress protocol as one log record per step, with its duration."""

    def __init__(self) -> None:
        self._started = time.perf_counter()
        self._name, self._total, self._done = "", 0, 0

    def start(self, name: str, total: int, done: int) -> None:
        self._name, self._total, self._done = name, total, done
        self._started = time.perf_counter()
        logger.info("%s: %d samples ...", name, total)

    def advance(self, n: int) -> None:
        self._done += n

    def finish(self) -> None:
        took = time.perf_counter() - self._started
        logger.info("%s: %d/%d done in %.1fs", self._name, self._done, self._total, took)


def make_progress(show: bool) -> ProgressProtocol | None:
    """A bar where one can be drawn, log records elsewhere; None when `show` is False."""
    if not show:
        return None
    console = Console(stderr=True)
    if console.is_jupyter and find_spec("ipywidgets") is None:
        # rich redraws a bar in a notebook through ipywidgets; without it, it warns `install
        # "ipywidgets" for Jupyter support` at every bar and draws nothing live.
        return LogProgress()
    if console.is_terminal or console.is_jupyter:
        return BarProgress(console)
    return LogProgress()
