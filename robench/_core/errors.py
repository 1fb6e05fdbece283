"""Errors robench raises on bad input, and the exit codes the CLI maps them to.

Every message is one sentence that names the bad value, what was expected and the fix.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_RUNTIME = 3
EXIT_INCONCLUSIVE = 4
# 128 + SIGPIPE, what a shell reports for `cat` when the reader of its output went away.
EXIT_BROKEN_PIPE = 141


def first_line(exc: BaseException, default: str | None = None) -> str:
    """The first line of `exc`'s message without its final period, to quote inside one of
    robench's sentences; `default` (else the exception's type name) when it has none."""
    text = str(exc).strip()
    if not text:
        return default or type(exc).__name__
    return text.splitlines()[0].rstrip(".")


class RobenchError(Exception):
    """Base class of errors caused by user input (exit code 2)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str = "", *args: object) -> None:
        super().__init__(_unwrap_worker_message(message), *args)


def _unwrap_worker_message(message: str) -> str:
    """The original sentence of an error torch re-raised from a DataLoader worker as "Caught X
    in DataLoader worker process N. Original Traceback ...", not the worker's traceback."""
    if not (message.startswith("Caught ") and "Original Traceback" in message):
        return message
    lines = message.rstrip().splitlines()
    for n in range(len(lines) - 1, 0, -1):
        found = _EXCEPTION_LINE.match(lines[n])
        if found:
            return "\n".join([found.group(1), *lines[n + 1 :]])
    return lines[-1]


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*: (.*)$")  # "robench._core.errors.DataError: ..."


class ConfigError(RobenchError):
    """A suite, model card, policy or command-line option is invalid."""


class DeviceMemoryError(ConfigError):
    """The GPU cannot hold even one sample. Unlike bad input, it leaves the finished batches
    valid: on a larger GPU, `--resume` continues the run."""


class CheckpointError(RobenchError):
    """A checkpoint cannot be read safely or does not fit the model."""


class DataError(RobenchError):
    """A dataset path or layout is not what robench can read."""


class AttackCheckError(RobenchError):
    """An attack returned images outside its threat model (eps-ball, [0, 1], NaN)."""

    exit_code = EXIT_RUNTIME


class PluginError(RobenchError):
    """Code a plugin registered (a renderer, reader, detector, metric, model source) raised
    or returned the wrong type: exit 3, the message naming the plugin and where it lives."""

    exit_code = EXIT_RUNTIME


class InputError(RobenchError, ValueError):
    """Bad input to the Python API: a ValueError, as Python callers expect, with the sentence
    `robench eval` prints; `kind` names the error robench raised (ConfigError, ...)."""

    def __init__(self, message: str = "", kind: str = "ConfigError") -> None:
        super().__init__(message)
        self.kind = kind


def as_input_errors(function: Callable[P, R]) -> Callable[P, R]:
    """A Python entry point's bad-input errors as `InputError`; runtime failures stay what
    they are. The CLI calls the layers below, so its exit codes do not change."""

    @functools.wraps(function)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except RobenchError as exc:
            if exc.exit_code != EXIT_USAGE or isinstance(exc, InputError):
                raise
            raise InputError(str(exc), kind=type(exc).__name__) from None

    return checked


class ResumeError(RobenchError):
    """A per-sample results file does not belong to the run being resumed."""


def shown_names(names: Sequence[str], limit: int = 5) -> str:
    """The first `limit` names quoted, and how many more, for a one-sentence message."""
    more = f" (and {len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(repr(name) for name in names[:limit]) + more
