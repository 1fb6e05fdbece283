"""Generated LRA data written into a new folder, whole or not at all (`robench generate`): a
hidden folder beside OUT is renamed to OUT once every file is written, and a folder with
files in it is refused, never added to or replaced.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from robench._core.errors import ConfigError
from robench.data.lra.listops_generator import ListOpsSpec, write_listops
from robench.data.lra.pathfinder import DIFFICULTIES
from robench.data.lra.pathfinder_generator import write_pathfinder


def _check_count(name: str, value: int, low: int) -> None:
    if value < low or value > 2**31 - 1:
        raise ConfigError(f"{name} must be an integer >= {low}, not {value}.")


def _give_default_mode(folder: Path) -> None:
    """0777 less the umask: mkdtemp makes the folder private, and OUT should not be."""
    mask = os.umask(0)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    folder.chmod(0o777 & ~mask)


def write_new_folder(out: Path, write: Callable[[Path], list[Path]]) -> list[Path]:
    """Run `write(folder)` in a fresh folder beside `out`, then rename it to `out`; the paths
    written, under `out`. `out` must not exist or be an empty folder."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(
            f"{out} already exists and is not an empty folder; generated data never replaces "
            "or adds to files; pass a new folder."
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        _give_default_mode(staging)
        written = write(staging)
        if out.exists():
            out.rmdir()  # empty, checked above
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [out / path.relative_to(staging) for path in written]


def generate_listops(
    out: Path, *, sizes: dict[str, int], seed: int, spec: ListOpsSpec | None = None
) -> list[Path]:
    """`basic_{train,val,test}.tsv` of `sizes[split]` distinct expressions each, in `out`."""
    spec = spec or ListOpsSpec()
    for split, count in sizes.items():
        _check_count(f"the {split} size", count, 1 if split == "train" else 0)
    spec.check()
    return write_new_folder(out, lambda folder: write_listops(folder, sizes, seed, spec))


def generate_pathfinder(
    out: Path, *, count: int, seed: int, difficulties: Sequence[str] = DIFFICULTIES
) -> list[Path]:
    """`count` images of each difficulty folder, in `out` (the layout of pathfinder32/)."""
    _check_count("the number of images", count, 1)
    unknown = [d for d in difficulties if d not in DIFFICULTIES]
    if unknown or not difficulties:
        raise ConfigError(
            f"unknown Pathfinder difficulty {', '.join(map(repr, unknown)) or '(none)'}; expected "
            f"one or more of {', '.join(DIFFICULTIES)}."
        )
    chosen = tuple(dict.fromkeys(difficulties))
    return write_new_folder(out, lambda folder: write_pathfinder(folder, count, seed, chosen))
