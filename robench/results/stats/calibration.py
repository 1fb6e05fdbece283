"""Calibration statistics: expected calibration error (ECE) and the bootstrap of a mean.

ECE (Guo et al., ICML 2017, "On Calibration of Modern Neural Networks"; Naeini et al. 2015)
with 15 equal-width bins (L1), as torchmetrics' `MulticlassCalibrationError(n_bins=15,
norm="l1")`, whose bins (a confidence of exactly 1 in a bin of its own) docs/formats.md
gives ("Calibration metrics"); Guo et al.'s bins are right-closed, which differs only for
confidences on a bin edge. Written as per-bin sums,

    ECE = sum_b |acc_b - conf_b| * n_b / n = (1 / n) * sum_b |sum_{i in b} (correct_i - conf_i)|

so a bootstrap resample's ECE is `|weights @ gaps|` (`bootstrap`, weighted): one matrix
product. A sample's value is its (confidence, correct) pair, the report's `ece` column.
Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from robench.results.stats.bootstrap import (
    UNBOUNDED,
    WeightedStatistic,
    bootstrap,
    centred_interval,
    weighted_mean,
)
from robench.results.stats.ratio_statistics import as_pairs

if TYPE_CHECKING:
    import numpy as np


ECE_BINS = 15  # Guo et al. 2017, and torchmetrics' default


@dataclass(frozen=True)
class CalibrationError(WeightedStatistic):
    """ECE with `n_bins` equal-width bins (L1) of (confidence, correct) pairs; called on
    pairs it returns a float (NaN for none); `interval` and `paired` bootstrap over samples."""

    n_bins: int = ECE_BINS

    def gaps(self, pairs: np.ndarray) -> np.ndarray:
        """(n, n_bins + 1): each sample's correct - confidence, in its bin's column."""
        import numpy as np

        confidence, correct = pairs[:, 0], pairs[:, 1]
        # floor(c * M): [b/M, (b+1)/M) -> b, and c == 1 -> M, the extra bin. A NaN confidence
        # (non-finite logits) goes to bin 0 with a NaN gap, so the ECE is NaN, not a guess.
        binned = np.nan_to_num(np.floor(confidence * self.n_bins), nan=0.0)
        bins = np.clip(binned, 0, self.n_bins).astype(np.intp)
        out = np.zeros((len(pairs), self.n_bins + 1))
        out[np.arange(len(pairs)), bins] = correct - confidence
        return out

    def of_weights(self, weights: np.ndarray, gaps: np.ndarray) -> np.ndarray:
        """ECE of each resample given by `weights` (count, n) over `gaps` (n, n_bins + 1)."""
        import numpy as np

        return np.abs(weights @ gaps).sum(axis=-1) / weights.sum(axis=-1)

    def rows(self, values: Sequence[Any] | np.ndarray) -> np.ndarray:
        return self.gaps(as_pairs(values))


def mean_bootstrap_interval(
    values: Sequence[Any], bounds: tuple[float, float] = UNBOUNDED
) -> tuple[float, float]:
    """95% bootstrap interval of the mean of real per-sample values (NLL, Brier score),
    centred on the mean and within `bounds`, seeded as every reported bootstrap is; (nan,
    nan) for none."""
    import numpy as np

    column = np.asarray(values, dtype=float).reshape(-1)
    if not len(column):
        return (math.nan, math.nan)
    return centred_interval(float(column.mean()), bootstrap(weighted_mean, column), bounds)
