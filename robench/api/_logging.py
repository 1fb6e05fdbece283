"""Warnings of `robench.evaluate` keep their `warning:` prefix when the caller set up no logging.

Python's last-resort handler prints the bare message: a warning that no longer says it is
one. For the length of one call, and only when neither the `robench` logger nor the root
logger has a handler, records of WARNING and above go to stderr as the CLI prints them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class PrefixFormatter(logging.Formatter):
    """`warning: MESSAGE`, as the CLI's lines read."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"{record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


@contextmanager
def prefixed_warnings() -> Iterator[None]:
    """Within the block, robench's warnings reach stderr prefixed, unless someone logs."""
    package = logging.getLogger("robench")
    if package.handlers or logging.getLogger().handlers:
        yield
        return
    handler = logging.StreamHandler()  # stderr, looked up when the record is written
    handler.setLevel(logging.WARNING)
    handler.setFormatter(PrefixFormatter())
    package.addHandler(handler)
    try:
        yield
    finally:
        package.removeHandler(handler)
