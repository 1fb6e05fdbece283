"""Seeded evaluation subsets (`--limit N`) and a hash that identifies them in reports.

The subset is the first `limit` entries of a permutation drawn by numpy's legacy
`RandomState`, whose stream numpy keeps stable across releases (NEP 19), so the same seed gives
the same images on every machine. Subsets are nested: with the same seed, `limit=100` is
contained in `limit=200`. The global RNGs are never touched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

from robench._core.errors import ConfigError

_MAX_SEED = 2**32 - 1


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
