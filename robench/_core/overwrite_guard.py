"""Refuse, before any work, an output path that would destroy one of the command's inputs (a
gate's summary over its baseline, a training run's checkpoint over its starting checkpoint).
Paths are compared as files, not strings: `./a.json`, a symlink or a hard link to it are one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from itertools import combinations
from pathlib import Path

from robench._core.errors import ConfigError


def nearest_existing(path: Path) -> Path:
    """`path`, or its closest ancestor that exists: where an output folder would be created,
    so whether it can be (a directory, writable) is known before any work."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def same_file(first: Path, second: Path) -> bool:
    """Whether two paths name one file: equal once symlinks are resolved, or hard links to
    one inode (only paths that exist can be hard links)."""
    if first.resolve() == second.resolve():
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them does not exist (yet)
        return False


def _inside(path: Path, folder: Path) -> bool:
    return folder.is_dir() and folder.resolve() in path.resolve().parents


Paths = Mapping[str, Path | None] | Iterable[tuple[str, Path | None]]


def _given(paths: Paths) -> list[tuple[str, Path]]:
    pairs = paths.items() if isinstance(paths, Mapping) else paths
    return [(flag, path) for flag, path in pairs if path is not None]


def refuse_overwriting_inputs(outputs: Paths, inputs: Paths, command: str) -> None:
    """Raise ConfigError when an output names an input (or lies inside an input folder), or
    when two outputs name one file. Both map an option (`--summary`) to its path (None: not
    given), as a mapping or as pairs (an option given several times)."""
    given_outputs, given_inputs = _given(outputs), _given(inputs)
    for out_flag, out in given_outputs:
        for in_flag, source in given_inputs:
            if same_file(out, source):
                raise ConfigError(
                    f"{out_flag} {out} is {in_flag} {source}, which {command} reads; writing "
                    f"there would destroy it; pass another {out_flag}."
                )
            if _inside(out, source):
                raise ConfigError(
                    f"{out_flag} {out} is inside {in_flag} {source}, which {command} reads; "
                    f"writing there would change it; pass another {out_flag}."
                )
    for (first_flag, first), (second_flag, second) in combinations(given_outputs, 2):
        if same_file(first, second):
            raise ConfigError(
                f"{first_flag} {first} and {second_flag} {second} are the same file, so one "
                f"would overwrite the other; pass a different {second_flag}."
            )
