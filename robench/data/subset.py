"""Evaluation subsets: seeded ones (`--limit N`), listed ones (`--subset`), and a hash that
identifies a subset in reports.

A seeded subset is the first `limit` entries of a permutation drawn by numpy's legacy
`RandomState`, whose stream numpy keeps stable across releases (NEP 19), so the same seed gives
the same images on every machine. Subsets are nested: with the same seed, `limit=100` is
contained in `limit=200`. The global RNGs are never touched.

A listed subset is a text file or a shipped list (`shipped_subsets()`): docs/formats.md,
"Subset file".
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

import numpy as np

from robench._core.bundled import shipped_or_file
from robench._core.errors import ConfigError, shown_names

_MAX_SEED = 2**32 - 1

_SUBSETS_DIR = Path(__file__).resolve().parent / "subsets"
_INTEGER = re.compile(r"[0-9]+")


def select_indices(n_total: int, limit: int | None, seed: int) -> list[int]:
    """Sorted indices of `limit` items drawn from `range(n_total)`; all of them when
    `limit` is None or at least `n_total`."""
    if n_total < 0:
        raise ValueError(f"n_total must be >= 0, got {n_total}")
    if limit is not None and limit <= 0:
        raise ConfigError(
            f"limit {limit} is not a positive number of samples; pass --limit N with N >= 1, "
            "or leave it out to use every sample."
        )
    if not 0 <= seed <= _MAX_SEED:
        raise ConfigError(f"seed {seed} is outside 0..{_MAX_SEED}; pass a seed in that range.")
    if limit is None or limit >= n_total:
        return list(range(n_total))
    permutation = np.random.RandomState(seed).permutation(n_total)
    return sorted(int(i) for i in permutation[:limit])


def indices_sha256(indices: Iterable[int]) -> str:
    """Hex sha256 of the index list written as ASCII decimals joined by commas."""
    text = ",".join(str(int(i)) for i in indices)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def shipped_subsets() -> dict[str, Path]:
    """Subset lists shipped with robench, by name (the file name without `.txt`)."""
    return {p.stem: p for p in sorted(_SUBSETS_DIR.glob("*.txt"))}


def _subset_file(spec: str | os.PathLike[str]) -> Path:
    """A shipped subset's name, or the path of a subset file."""
    holds = "one file name or index per line"
    return shipped_or_file(spec, shipped_subsets(), "subset", holds, ConfigError)


def _read_ids(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read subset file {path} ({exc}); pass a UTF-8 text file."
        ) from None
    ids = [line.strip() for line in text.splitlines()]
    ids = [i for i in ids if i and not i.startswith("#")]
    if not ids:
        raise ConfigError(
            f"subset file {path} lists no items; write one file name or index per line."
        )
    repeated = [i for i, count in Counter(ids).items() if count > 1]
    if repeated:
        raise ConfigError(
            f"subset file {path} lists {len(repeated)} item(s) more than once: "
            f"{shown_names(repeated)}; list each item once."
        )
    return ids


def _indices_from_numbers(path: Path, ids: list[str], n_items: int) -> list[int]:
    indices = [int(i) for i in ids]
    outside = [i for i in ids if int(i) >= n_items]
    if outside:
        raise ConfigError(
            f"subset file {path} lists {len(outside)} index(es) outside this dataset of "
            f"{n_items} items (valid: 0..{n_items - 1}): {shown_names(outside)}; the indices are "
            "0-based positions in the dataset's order."
        )
    return indices


def _indices_from_names(path: Path, ids: list[str], names: Sequence[str]) -> list[int]:
    by_path = {PurePosixPath(n).as_posix(): index for index, n in enumerate(names)}
    by_name: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        by_name.setdefault(PurePosixPath(name).name, []).append(index)
    indices: list[int] = []
    missing: list[str] = []
    ambiguous: list[str] = []
    for item in ids:
        key = PurePosixPath(item.replace("\\", "/")).as_posix()
        if key in by_path:
            indices.append(by_path[key])
            continue
        matches = by_name.get(PurePosixPath(key).name, [])
        if len(matches) == 1:
            indices.append(matches[0])
        elif matches:
            ambiguous.append(item)
        else:
            missing.append(item)
    if ambiguous:
        raise ConfigError(
            f"subset file {path} names {len(ambiguous)} file(s) that occur in several class "
            f"folders of the dataset: {shown_names(ambiguous)}; write them as <class>/<file>."
        )
    if missing:
        raise ConfigError(
            f"{len(missing)} of the {len(ids)} images listed in subset file {path} are not in "
            f"the dataset: {shown_names(missing)}; point --data at the folder that holds them "
            "(ROOT/<class>/<file>; for RobustBench's ImageNet subset, the ImageNet validation "
            "set with one folder per WordNet id), or list only images the dataset has."
        )
    if len(set(indices)) != len(indices):
        raise ConfigError(
            f"subset file {path} names the same image twice (once by <class>/<file>, once by "
            "file name); list each image once."
        )
    return indices


def resolve_subset(
    spec: str | os.PathLike[str], n_items: int, names: Sequence[str] | None = None
) -> list[int]:
    """Sorted indices of the dataset items a subset (`spec`: a shipped name or a file) lists.
    `names`: the items' relative paths `<class>/<file>` in dataset order (`relative_paths()`),
    or None for a dataset without file names (IDX), which then takes integer indices only."""
    if names is not None and len(names) != n_items:
        raise ValueError(f"names has {len(names)} entries for a dataset of {n_items} items")
    path = _subset_file(spec)
    ids = _read_ids(path)
    if all(_INTEGER.fullmatch(i) for i in ids):
        return sorted(_indices_from_numbers(path, ids, n_items))
    if names is None:
        raise ConfigError(
            f"subset file {path} lists file names ({shown_names(ids)}) but this dataset has no "
            "file names (IDX data); list 0-based integer indices instead, one per line."
        )
    return sorted(_indices_from_names(path, ids, names))
