"""`checked_ranges`: the command line's numbers checked against the one table of valid
ranges (robench/evaluation/options/ranges.py, which the Python API reads too)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from robench.evaluation.options.ranges import OPTION_RANGES, Range, check_range, flag_of

__all__ = ["OPTION_RANGES", "Range", "check_range", "checked_ranges", "flag_of"]

F = TypeVar("F", bound=Callable[..., Any])


def checked_ranges(command: F) -> F:
    """Check the numeric options `command` receives against `OPTION_RANGES` before it runs."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name, value in kwargs.items():
            flag = flag_of(name)
            if flag in OPTION_RANGES and isinstance(value, int | float):
                check_range(flag, value)
        return command(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
