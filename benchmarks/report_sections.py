"""Keep one benchmark's section of reports/benchmarks.md up to date: a benchmark writes its
latest results between its own marker comments and leaves every other section alone."""

from __future__ import annotations

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
