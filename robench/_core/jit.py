"""`cached_njit`: numba's `njit(cache=True)`, falling back to plain `njit` where numba finds no
writable cache location (a read-only install without `NUMBA_CACHE_DIR`), so kernels are then
compiled in every process instead of failing. numba is imported by the modules that use it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar, cast

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
_uncached: list[str] = []  # kernels numba could not cache; warn about the first only


def cached_njit(function: F) -> F:
    """`njit(cache=True)(function)`, or `njit(function)` when it cannot be cached."""
    from numba import njit

    try:
        return cast(F, njit(cache=True)(function))
    except RuntimeError as error:  # numba: "cannot cache function ...: no locator available"
        log = logger.debug if _uncached else logger.warning
        _uncached.append(function.__name__)
        log("numba cannot cache %s (%s); compiling per process", function.__name__, error)
        return cast(F, njit(function))
