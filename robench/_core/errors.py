"""Errors robench raises on bad input, and the exit codes the CLI maps them to.

Every message is one sentence that names the bad value, what was expected and the fix.
"""

from __future__ import annotations

from collections.abc import Sequence

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_RUNTIME = 3
EXIT_INCONCLUSIVE = 4


class RobenchError(Exception):
    """Base class of errors caused by user input (exit code 2)."""

    exit_code = EXIT_USAGE


class ConfigError(RobenchError):
    """A suite, model card, policy or command-line option is invalid."""


class CheckpointError(RobenchError):
    """A checkpoint cannot be read safely or does not fit the model."""


class DataError(RobenchError):
    """A dataset path or layout is not what robench can read."""


class AttackCheckError(RobenchError):
    """An attack returned images outside its threat model (eps-ball, [0, 1], NaN)."""

    exit_code = EXIT_RUNTIME


class ResumeError(RobenchError):
    """A per-sample results file does not belong to the run being resumed."""


def shown_names(names: Sequence[str], limit: int = 5) -> str:
    """The first `limit` names quoted, and how many more, for a one-sentence message."""
    more = f" (and {len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(repr(name) for name in names[:limit]) + more
