"""Bootstrap resamples as weights: how many times each sample was drawn.

A statistic that is a function of per-sample sums (summed pixel counts of segmentation, the
per-bin gaps of ECE, a mean) has, for a resample, the sums `weights @ features`, where
`weights` (count, n) says how often each of the n samples was drawn; a matrix product
instead of a (count, n, ...) copy of the drawn samples. The draws are those of
`numpy.random.default_rng(seed).integers(0, n, size=(count, n))`, chunked to bound memory,
so a seed gives the same resamples whatever statistic reads them. Torch-free.

Every reported interval uses the same seed, so the draws depend on n alone: the weights of
the last n are kept (as small integers, up to `_CACHE_BYTES`), and the next statistic of n
samples (ECE, NLL and Brier of one result, then of the next) only multiplies. Drawing is the
cost: it was about 3/4 of a calibration interval at n = 10,000.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_CHUNK = 2_000_000  # resampled sample indices per chunk (bounded memory)
_CACHE_BYTES = 64_000_000  # kept draws: 2,000 resamples of up to 32,000 samples


def _chunks(n: int, n_resamples: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first resample, weights (count, n) as int64 counts) of each chunk of draws."""
    import numpy as np

    rng = np.random.default_rng(seed)
    per_chunk = max(1, _CHUNK // max(n, 1))
    for start in range(0, n_resamples, per_chunk):
        count = min(per_chunk, n_resamples - start)
        drawn = rng.integers(0, n, size=(count, n)) + n * np.arange(count)[:, None]
        yield start, np.bincount(drawn.ravel(), minlength=count * n).reshape(count, n)


@functools.lru_cache(maxsize=1)
def _kept(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """All the weights (n_resamples, n), as uint8 (a sample drawn over 255 times in one
    resample, possible only for tiny n, is not kept this way: uint16 then)."""
    import numpy as np

    out = np.empty((n_resamples, n), dtype=np.uint16)
    for start, weights in _chunks(n, n_resamples, seed):
        out[start : start + len(weights)] = weights
    return out.astype(np.uint8) if out.max(initial=0) <= 255 else out


def resampled_weights(
    n: int, n_resamples: int, seed: int, each: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """`each(weights)` for `n_resamples` draws of n sample indices with replacement,
    chunked; `weights` (count, n), float, says how many times each sample was drawn in each
    resample of the chunk, and `each` returns one value per resample (count,)."""
    import numpy as np

    out = np.empty(n_resamples)
    if n * n_resamples <= _CACHE_BYTES:
        kept = _kept(n, n_resamples, seed)
        per_chunk = max(1, _CHUNK // max(n, 1))
        for start in range(0, n_resamples, per_chunk):
            weights = kept[start : start + per_chunk].astype(float)
            out[start : start + len(weights)] = each(weights)
        return out
    for start, counts in _chunks(n, n_resamples, seed):
        out[start : start + len(counts)] = each(counts.astype(float))
    return out
