"""Bootstrap resamples as weights: how many times each sample was drawn.

A statistic that is a function of per-sample sums (summed pixel counts of segmentation, the
per-bin gaps of ECE, a mean) has, for a resample, the sums `weights @ features`, where
`weights` (count, n) says how often each of the n samples was drawn; a matrix product
instead of a (count, n, ...) copy of the drawn samples. The draws are those of
`numpy.random.default_rng(seed).integers(0, n, size=(count, n))`, chunked to bound memory,
so a seed gives the same resamples whatever statistic reads them. Torch-free.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_CHUNK = 2_000_000  # resampled sample indices per chunk (bounded memory)


def resampled_weights(
    n: int, n_resamples: int, seed: int, each: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """`each(weights)` for `n_resamples` draws of n sample indices with replacement,
    chunked; `weights` (count, n), float, says how many times each sample was drawn in each
    resample of the chunk, and `each` returns one value per resample (count,)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = np.empty(n_resamples)
    per_chunk = max(1, _CHUNK // max(n, 1))
    for start in range(0, n_resamples, per_chunk):
        count = min(per_chunk, n_resamples - start)
        drawn = rng.integers(0, n, size=(count, n)) + n * np.arange(count)[:, None]
        weights = np.bincount(drawn.ravel(), minlength=count * n).reshape(count, n)
        out[start : start + count] = each(weights.astype(float))
    return out
