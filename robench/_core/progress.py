"""What long work (the runner, the sanity battery, reading images) tells whoever displays
progress: a rich bar (`progress_bar.BarProgress`, for the CLI on a terminal and for
`robench.evaluate` in a terminal or notebook), bounded plain lines on a pipe
(robench/cli/_progress.py) or log records (robench/api/_progress.py)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, name: str, total: int, done: int) -> None: ...

    def advance(self, n: int) -> None: ...

    def finish(self) -> None: ...


class NoProgress:
    """Shows nothing: the default when no one displays progress."""

    def start(self, name: str, total: int, done: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        pass
