"""A sequential paired test of "regressed beyond the tolerance": testing by betting.

For one gate check, each paired sample gives a direction-aware difference d_i = candidate_i -
baseline_i in {-1, 0, 1} (for a lower-is-better binary metric, baseline - candidate), mapped
to y_i = (d_i + 1) / 2 in [0, 1]. The boundary between the two verdicts is a mean difference
of -tolerance, i.e. a mean of y of m = (1 - tolerance) / 2. Two test supermartingales
(Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting", JRSSB
2024, Sections 4-5) bet against the two one-sided hypotheses:

    no regression beyond the tolerance   rejects H0: E[y] <= m with K+_t = prod(1 + l+_i (y_i - m))
    regression beyond the tolerance      rejects H0: E[y] >= m with K-_t = prod(1 - l-_i (y_i - m))

with predictable bets (aGRAPA, their Section 5.1) l_i = clip(g / (sigma2_{i-1} + g^2), 0,
c / m) (c / (1 - m) for K-; c = 3/4), where g = +-(mu_hat_{i-1} - m) and mu_hat, sigma2 are the
smoothed running estimates of `confidence_sequences.smoothed_moments`. Under its null each
K is a nonnegative supermartingale, so by Ville's inequality P(sup_t K_t >= 1/alpha) <= alpha:
p_t = min(1, 1 / max_{s<=t} K_s) is an anytime-valid p-value. A check is settled once one
of the two p-values is at most alpha. Only one of the two hypotheses can be false, so a wrong
verdict has probability at most alpha, whenever the evaluation stops.

numpy only (imported in the functions); part of the torch-free results layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from robench.results.stats.confidence_sequences import smoothed_moments

if TYPE_CHECKING:
    import numpy as np

METHOD = "paired betting test (aGRAPA bets, Waudby-Smith & Ramdas 2024)"
BET_TRUNCATION = 0.75  # c: a bet risks at most this share of the wealth (the paper: 1/2 or 3/4)


@dataclass(frozen=True)
class SequentialVerdict:
    """Where a sequential paired test stands after n paired samples."""

    n: int
    mean_difference: float  # mean of d (direction-aware: negative when the candidate is worse)
    p_regression: float  # anytime p-value of "no regression beyond tolerance" (small: regressed)
    p_no_regression: float  # anytime p-value of "regressed beyond the tolerance" (small: fine)
    alpha: float

    @property
    def regressed(self) -> bool:
        return self.p_regression <= self.alpha

    @property
    def within_tolerance(self) -> bool:
        return self.p_no_regression <= self.alpha

    @property
    def settled(self) -> bool:
        return self.regressed or self.within_tolerance


def log_wealth(y: np.ndarray, m: float, c: float = BET_TRUNCATION) -> tuple[np.ndarray, np.ndarray]:
    """log K+_t and log K-_t for t = 1..n (along the last axis of `y`, values in [0, 1])."""
    import numpy as np

    mu_prev, sigma2_prev = smoothed_moments(y)
    gap = mu_prev - m
    up = np.clip(gap / (sigma2_prev + gap**2), 0.0, c / m)
    down = np.clip(-gap / (sigma2_prev + gap**2), 0.0, c / (1 - m))
    return (
        np.cumsum(np.log1p(up * (y - m)), axis=-1),
        np.cumsum(np.log1p(-down * (y - m)), axis=-1),
    )


def paired_differences(
    baseline: Sequence[Any] | np.ndarray, candidate: Sequence[Any] | np.ndarray, higher: bool
) -> np.ndarray:
    """y_i = (d_i + 1) / 2 of binary per-sample values, d direction-aware (see above)."""
    import numpy as np

    d = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    return ((d if higher else -d) + 1) / 2


def sequential_paired_test(y: Sequence[float] | np.ndarray, tolerance: float, alpha: float):
    """The verdict after the paired values `y` (in evaluation order; see the module text)."""
    import numpy as np

    values = np.asarray(y, dtype=float)
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance}")
    if values.size == 0:
        return SequentialVerdict(0, 0.0, 1.0, 1.0, alpha)
    up, down = log_wealth(values, (1 - tolerance) / 2)
    return SequentialVerdict(
        n=int(values.size),
        mean_difference=float(2 * values.mean() - 1),
        p_regression=float(min(1.0, np.exp(-down.max()))),
        p_no_regression=float(min(1.0, np.exp(-up.max()))),
        alpha=alpha,
    )
