"""How many DataLoader worker processes load a run's data (`--workers`, default `auto`).

`auto`: none for data already in memory or held as arrays (IDX files, CIFAR-10-C, text,
a dataset passed from Python), where a worker process costs more than the loading it takes
over; min(8, CPUs) for data decoded from files per sample (image folders: JPEG decoding and
resizing), so the GPU does not wait on the main thread. Corruptions run in the workers too;
results do not depend on the number.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from robench._core.errors import ConfigError

AUTO = "auto"
MAX_AUTO_WORKERS = 8


def check_workers(value: int | str) -> int | str:
    """`auto` or a count >= 0 (a command line's text too); otherwise one ConfigError."""
    if value == AUTO:
        return AUTO
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = -1
    if count < 0 or isinstance(value, bool) or (isinstance(value, float) and value != count):
        raise ConfigError(
            f"--workers must be auto, 0 (load data in the main process) or more, got "
            f"{value!r}; pass a count, e.g. --workers auto or --workers 2."
        )
    return count


def decodes_files(dataset: Any) -> bool:
    """Whether a dataset reads and decodes a file per sample (it lists its files)."""
    names = getattr(dataset, "relative_paths", None)
    return callable(names) and names() is not None


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_workers(requested: int | str, datasets: Iterable[Any]) -> int:
    """The worker count for `requested` (`auto` or a count) over the run's datasets."""
    count = check_workers(requested)
    if isinstance(count, int):
        return count
    return min(MAX_AUTO_WORKERS, _cpus()) if any(map(decodes_files, datasets)) else 0
