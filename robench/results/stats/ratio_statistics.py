"""Metrics that are a function of a ratio of sums over samples, and their bootstrap.

Perplexity is exp(total NLL / total tokens) over evaluation windows, not a mean of per-window
perplexities: windows differ in length, and the corpus-level number is what lm-evaluation-harness
and the paper report. Each window's record contributes a (numerator, denominator) pair; the
statistic of a set of windows is `transform(sum numerators / sum denominators)`.

Intervals and paired gates resample windows (`bootstrap`, seeded, so a report is
reproducible), keeping each window's pair together. This module is torch-free.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from robench.results.stats.bootstrap import (
    UNBOUNDED,
    bootstrap,
    centred_interval,
    paired_summary,
)

# numpy is imported where it is used: `robench compare` reads reports without it.
if TYPE_CHECKING:
    import numpy as np

    from robench.results.stats.paired_statistic import PairedResult, Values


@dataclass(frozen=True)
class RatioOfSums:
    """`transform(sum(num) / sum(den))` of an (n, 2) array of per-sample pairs, or of a
    stack of resamples (..., n, 2); called on pairs, returns a float.

    `transform` is increasing (exp for a perplexity), so the interval is taken on the ratio,
    where the bootstrap is closer to normal, and transformed: the interval of a perplexity
    is exp of the interval of the mean NLL, and holds the perplexity as that holds the NLL."""

    transform: Callable[[np.ndarray], np.ndarray]
    bounds: tuple[float, float] = UNBOUNDED  # the values the ratio can take
    unit: ClassVar[str] = "samples"  # what a resample draws (the gate's description)

    def ratios(self, pairs: np.ndarray) -> np.ndarray:
        """The statistic before `transform`: sum num / sum den."""
        import numpy as np

        num, den = pairs[..., 0].sum(axis=-1), pairs[..., 1].sum(axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(num / den)

    def values(self, pairs: np.ndarray) -> np.ndarray:
        import numpy as np

        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(self.transform(self.ratios(pairs)))

    def __call__(self, pairs: Sequence[Any] | np.ndarray) -> float:
        array = as_pairs(pairs)
        return float(self.values(array)) if array.size else math.nan

    def interval(self, values: Sequence[Any] | np.ndarray) -> tuple[float, float]:
        """95% bootstrap interval over samples (a `Metric.interval`), centred on the value
        and within `bounds`; (nan, nan) if none or undefined. The resamples are the drawn
        pairs themselves (`weighted=False`): a median needs them."""
        import numpy as np

        pairs = as_pairs(values)
        if len(pairs) == 0:
            return (math.nan, math.nan)
        replicates = bootstrap(self.ratios, pairs, weighted=False)
        # A resample may leave a statistic undefined (no attacked sample drawn): left out.
        low, high = centred_interval(float(self.ratios(pairs)), replicates, self.bounds)
        with np.errstate(over="ignore", invalid="ignore"):
            low, high = (float(self.transform(np.float64(end))) for end in (low, high))
        return low, high

    def paired(
        self, baseline: Values, candidate: Values, n_resamples: int, seed: int, alternative: str
    ) -> PairedResult:
        """Paired bootstrap of `self(candidate) - self(baseline)` over samples (what a gate
        calls; `bootstrap.paired_summary`)."""
        base, cand = as_pairs(baseline), as_pairs(candidate)
        observed = float(self.values(cand) - self.values(base))
        diffs = bootstrap(
            lambda b, c: self.values(c) - self.values(b),
            base,
            cand,
            n_resamples=n_resamples,
            seed=seed,
            weighted=False,
        )
        return paired_summary(observed, diffs, len(base), alternative)


def _identity(values: np.ndarray) -> np.ndarray:
    return values


@dataclass(frozen=True)
class MedianOfMarked(RatioOfSums):
    """The median of the numerators of the pairs whose denominator is 1 (marked), e.g. the
    queries of the samples an attack ran on; the same bootstrap and paired bootstrap."""

    transform: Callable[[np.ndarray], np.ndarray] = _identity

    def ratios(self, pairs: np.ndarray) -> np.ndarray:
        import numpy as np

        marked = np.where(pairs[..., 1] > 0, pairs[..., 0], np.nan)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # no marked sample: NaN
            return np.asarray(np.nanmedian(marked, axis=-1))


def as_pairs(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Per-sample (numerator, denominator) pairs as a float (n, 2) array."""
    import numpy as np

    array = np.asarray(values, dtype=float)
    return array.reshape(-1, 2) if array.size else np.zeros((0, 2))
