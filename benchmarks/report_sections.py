"""Keep one benchmark's section of reports/benchmarks.md up to date: a benchmark writes its
latest results between its own marker comments and leaves every other section alone."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def write_section(path: Path, section: str, start: str, end: str) -> None:
    """Replace the text from `start` to `end` in `path` by `section` (which begins with
    `start` and ends with `end`), or append `section` when the markers are not there yet."""
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo, else what `platform` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, for the record of a noisy machine."""
    return ", ".join(f"{v:.2f}" for v in os.getloadavg())
