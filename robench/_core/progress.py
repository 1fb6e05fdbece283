"""What long work tells whoever displays progress (the CLI draws rich progress bars)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, name: str, total: int, done: int) -> None: ...

    def advance(self, n: int) -> None: ...

    def finish(self) -> None: ...
