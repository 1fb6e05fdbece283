"""The bootstrap over samples: one seeded, vectorised resampler for every interval and paired
test robench computes, and the interval it reports.

`bootstrap(statistic, *samples)` draws `n_resamples` resamples of the n samples with
replacement (`numpy.random.default_rng(seed).integers(0, n, size=(count, n))`, in chunks that
bound memory) and returns the statistic of each. Several `samples` (arrays whose first axis is
the n samples) are *paired*: one draw resamples all of them, so a sample's baseline and
candidate values stay together. The statistic sees a resample in one of two forms:
- `weighted=True` (the default): `statistic(weights, *samples)` with `weights` (count, n),
  float, how many times each sample was drawn in each resample of the chunk. A statistic of
  per-sample sums (a mean, the per-bin gaps of ECE, summed pixel counts) is then one matrix
  product `weights @ features` instead of a (count, n, ...) copy of the drawn samples;
- `weighted=False`: `statistic(*resampled)` with each sample array indexed by the drawn
  indices, (count, n, ...): for statistics that need the drawn values themselves (a median).

The draws are a stream of the seed: numpy keeps the part-used 32-bit word in the bit
generator, so chunking does not change them, and a seed gives the same resamples whatever
statistic reads them and whichever form. A `Generator` may be passed as `seed` to continue
its stream (independent resamples of several blocks, `aggregate_samples`).

Every reported interval uses the same seed, so the draws depend on n alone: the weights of
the last n are kept (as small integers, up to `_CACHE_BYTES`), and the next statistic of n
samples (ECE, NLL and Brier of one result, then of the next) only multiplies.

The interval (`centred_interval`) is estimate +- 1.96 bootstrap standard errors (Efron &
Tibshirani 1993, An Introduction to the Bootstrap, ch. 6 and 12), which contains its
estimate; why not a percentile, BC or BCa interval, and the coverage measured:
docs/formats.md, "Intervals". Torch-free.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import numpy as np

BOOTSTRAP_RESAMPLES = 2_000  # for a reported interval; gates use their policy's count
BOOTSTRAP_SEED = 0
Z_95 = 1.959963984540054  # two-sided 95% normal quantile
UNBOUNDED = (-math.inf, math.inf)

_CHUNK = 2_000_000  # resampled sample indices per chunk (bounded memory)
_CACHE_BYTES = 64_000_000  # kept draws: 2,000 resamples of up to 32,000 samples


def _per_chunk(n: int, width: int) -> int:
    """Resamples per chunk: at most `_CHUNK` drawn indices, and at most 4 x `_CHUNK`
    numbers the statistic holds (`width` per resample: summed counts of many results)."""
    return max(1, min(_CHUNK // max(n, 1), _CHUNK * 4 // max(width, 1)))


def _draws(n: int, n_resamples: int, seed: Any, width: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first resample, drawn indices (count, n)) of each chunk."""
    import numpy as np

    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    per_chunk = _per_chunk(n, width)
    for start in range(0, n_resamples, per_chunk):
        count = min(per_chunk, n_resamples - start)
        yield start, rng.integers(0, n, size=(count, n))


def _counts(drawn: np.ndarray) -> np.ndarray:
    """How many times each of n samples was drawn in each resample: (count, n) int64."""
    import numpy as np

    count, n = drawn.shape
    flat = drawn + n * np.arange(count)[:, None]
    return np.bincount(flat.ravel(), minlength=count * n).reshape(count, n)


@functools.lru_cache(maxsize=1)
def _kept(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """All the weights (n_resamples, n), as uint8 (a sample drawn over 255 times in one
    resample, possible only for tiny n, is not kept this way: uint16 then)."""
    import numpy as np

    out = np.empty((n_resamples, n), dtype=np.uint16)
    for start, drawn in _draws(n, n_resamples, seed, 1):
        out[start : start + len(drawn)] = _counts(drawn)
    return out.astype(np.uint8) if out.max(initial=0) <= 255 else out


def _weight_chunks(n: int, n_resamples: int, seed: Any, width: int) -> Iterator[np.ndarray]:
    if isinstance(seed, int) and n * n_resamples <= _CACHE_BYTES:
        kept = _kept(n, n_resamples, seed)
        per_chunk = _per_chunk(n, width)
        for start in range(0, n_resamples, per_chunk):
            yield kept[start : start + per_chunk].astype(float)
        return
    for _, drawn in _draws(n, n_resamples, seed, width):
        yield _counts(drawn).astype(float)


def bootstrap(
    statistic: Callable[..., np.ndarray],
    *samples: np.ndarray,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: Any = BOOTSTRAP_SEED,
    weighted: bool = True,
    width: int = 1,
) -> np.ndarray:
    """The statistic of `n_resamples` resamples of `samples` (paired), as (n_resamples, ...)
    replicates; `weighted` and `seed` as the module text says. `width`: numbers per resample
    the statistic holds, to bound a chunk's memory."""
    import numpy as np

    if not samples:
        raise ValueError("bootstrap needs at least one array of samples")
    n = len(samples[0])
    if any(len(s) != n for s in samples):
        raise ValueError(f"paired samples differ in length: {[len(s) for s in samples]}")
    if n == 0:
        raise ValueError("a bootstrap needs at least one sample")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    parts: list[np.ndarray] = []
    if weighted:
        for weights in _weight_chunks(n, n_resamples, seed, width):
            parts.append(np.asarray(statistic(weights, *samples)))
    else:
        for _, drawn in _draws(n, n_resamples, seed, width):
            parts.append(np.asarray(statistic(*(s[drawn] for s in samples))))
    return np.concatenate(parts)


def weighted_mean(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The mean of `values` (n,) in each resample given by `weights` (count, n)."""
    result: np.ndarray = (weights @ values) / weights.sum(axis=-1)
    return result


class WeightedStatistic:
    """A statistic of per-sample rows that depends on their (weighted) sums, so that a
    resample's value is one matrix product (`bootstrap`, weighted): ECE of per-bin gaps,
    mIoU of pixel counts. `rows` turns stored per-sample values into the rows (n, ...),
    `of_weights` gives the statistic of each resample of weights (count, n); the value is
    `of_weights` at unit weights, so the interval holds it."""

    unit: ClassVar[str] = "samples"  # what a resample draws (the gate's description)
    bounds: ClassVar[tuple[float, float]] = (0.0, 1.0)  # the values the statistic can take

    def rows(self, values: Any) -> np.ndarray:
        raise NotImplementedError

    def of_weights(self, weights: np.ndarray, rows: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _at_unit_weights(self, rows: np.ndarray) -> float:
        import numpy as np

        return float(self.of_weights(np.ones((1, len(rows))), rows)[0])

    def __call__(self, values: Any) -> float:
        """The statistic of the per-sample values; NaN for none."""
        rows = self.rows(values)
        return self._at_unit_weights(rows) if len(rows) else math.nan

    def interval(
        self, values: Any, n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
    ) -> tuple[float, float]:
        """95% bootstrap interval over samples (a `Metric.interval`): `centred_interval`
        within `bounds`; (nan, nan) for none."""
        rows = self.rows(values)
        if not len(rows):
            return (math.nan, math.nan)
        replicates = bootstrap(self.of_weights, rows, n_resamples=n_resamples, seed=seed)
        return centred_interval(self._at_unit_weights(rows), replicates, self.bounds)

    def paired(
        self, baseline: Any, candidate: Any, n_resamples: int, seed: int, alternative: str
    ) -> tuple[float, tuple[float, float], float, float]:
        """`paired_summary` of candidate - baseline over the same samples, one draw
        resampling both (what a gate calls)."""
        base, cand = self.rows(baseline), self.rows(candidate)
        if base.shape != cand.shape:
            raise ValueError(f"paired samples differ in shape: {base.shape} vs {cand.shape}")
        if not len(base):
            raise ValueError("a paired bootstrap needs at least one sample")
        observed = self._at_unit_weights(cand) - self._at_unit_weights(base)
        diffs = bootstrap(
            lambda w, b, c: self.of_weights(w, c) - self.of_weights(w, b),
            base,
            cand,
            n_resamples=n_resamples,
            seed=seed,
        )
        return paired_summary(observed, diffs, len(base), alternative)


def centred_interval(
    estimate: float, replicates: np.ndarray, bounds: tuple[float, float] = UNBOUNDED
) -> tuple[float, float]:
    """95% interval estimate +- 1.96 x the replicates' standard deviation, cut to `bounds`
    (the values the statistic can take); it contains `estimate` (when within `bounds`).
    Non-finite replicates (a resample where the statistic is undefined) are left out;
    (nan, nan) when the estimate or every replicate is undefined."""
    import numpy as np

    finite = replicates[np.isfinite(replicates)]
    if not math.isfinite(estimate) or finite.size == 0:
        return (math.nan, math.nan)
    half = Z_95 * float(np.std(finite, ddof=1)) if finite.size > 1 else 0.0
    return (max(bounds[0], estimate - half), min(bounds[1], estimate + half))


def bootstrap_p_value(replicates: np.ndarray, observed: float, alternative: str) -> float:
    """p-value of "no difference" from bootstrap replicates of a difference: the replicates
    shifted to a zero mean are compared with the observed value, with the +1 correction so it
    is never exactly 0."""
    import numpy as np

    null = replicates - observed
    exceed = {
        "two-sided": np.abs(null) >= abs(observed),
        "greater": null >= observed,
        "less": null <= observed,
    }[alternative]
    return (1 + int(exceed.sum())) / (1 + len(replicates))


def paired_summary(
    observed: float, diffs: np.ndarray, n: int, alternative: str
) -> tuple[float, tuple[float, float], float, float]:
    """What a gate reads of a paired bootstrap of a difference (`PairedStatistic.paired`):
    (observed difference, its 95% interval, the p-value of "no difference" under
    `alternative`, the bootstrap sd of the difference x sqrt(n): the per-sample sd that
    sample-size estimates use). Undefined replicates (NaN) are left out; none left: (nan,
    nan) interval, p-value 1 and sd 0."""
    import numpy as np

    diffs = diffs[np.isfinite(diffs)]
    if len(diffs) == 0:
        return observed, (math.nan, math.nan), 1.0, 0.0
    interval = centred_interval(observed, diffs)
    sd = float(np.std(diffs, ddof=1) * math.sqrt(n)) if len(diffs) > 1 else 0.0
    return observed, interval, bootstrap_p_value(diffs, observed, alternative), sd
