"""Anytime-valid confidence sequences for the mean of values in [0, 1].

A fixed-n interval (Wilson) covers the mean with 95% probability at one sample size chosen in
advance. Looking at it after every chunk and stopping once it is narrow enough breaks that:
the chance that it misses the mean at the data-dependent stopping time is larger than 5%. A
confidence sequence (C_t) covers the mean at every t at once, P(for all t: mu in C_t) >=
1 - alpha, so it covers the mean at any stopping time, however the stopping depends on the
data (Ville's inequality).

`eb_confidence_sequence` is the predictable plug-in empirical-Bernstein (PrPl-EB) confidence
sequence of Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting",
JRSSB 86(1), 2024 (arXiv:2010.09686), Theorem 2, for x_1, x_2, ... in [0, 1] with conditional
mean mu:

    mu_hat_t    = (1/2 + sum_{i<=t} x_i) / (t + 1)
    sigma2_t    = (1/4 + sum_{i<=t} (x_i - mu_hat_i)^2) / (t + 1)
    lambda_t    = min( sqrt(2 log(2/alpha) / (sigma2_{t-1} t log(1 + t))), c ),  c = 1/2
    v_t         = 4 (x_t - mu_hat_{t-1})^2
    psi_E(l)    = (-log(1 - l) - l) / 4
    C_t         = sum(lambda_i x_i) / sum(lambda_i)
                  +- (log(2/alpha) + sum(v_i psi_E(lambda_i))) / sum(lambda_i)

(mu_hat_0 = 1/2, sigma2_0 = 1/4; log(2/alpha): alpha/2 on each side.) Its width shrinks like
sigma sqrt(2 log(2/alpha) log t / t), about a Bernstein interval's with an extra log t factor.

The theorem holds for any predictable bets lambda_t in (0, 1). A run that stops at a target
half-width H (`robench eval --target-halfwidth`) uses the bets tuned to it, as the paper tunes
lambda to a sample size n fixed in advance (lambda = sqrt(2 log(2/alpha) / (n sigma2))): the
margin sqrt(2 sigma2 log(2/alpha) / n) of a fixed lambda equals H at n = 2 sigma2 log(2/alpha)
/ H^2, where that lambda is H / sigma2, so

    lambda_t    = min( H / sigma2_{t-1}, c )

(samples needed against a fixed-n interval: docs/sequential.md). robench reports the running
intersection of C_1..C_t clipped to [0, 1], which is still a confidence sequence
(Proposition 1 of the paper's arXiv version) and never widens. Torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from robench.results.stats.metrics import Metric

METHOD = "predictable plug-in empirical-Bernstein confidence sequence (Waudby-Smith & Ramdas 2024)"
TRUNCATION = 0.5  # c: the largest bet lambda_t of the confidence sequence


def covers(metric: Metric) -> bool:
    """Whether `metric` is a mean of per-sample values in [0, 1] (top1, top5: binary, with
    no statistic of its own), which these confidence sequences and the sequential paired
    test apply to."""
    return metric.paired_test == "binary" and metric.statistic is None


@dataclass(frozen=True)
class ConfidenceSequence:
    """The running-intersection bounds after each of n values (arrays of shape (..., n))."""

    lower: np.ndarray
    upper: np.ndarray

    @property
    def halfwidth(self) -> np.ndarray:
        return (self.upper - self.lower) / 2


def smoothed_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """mu_hat_{t-1} and sigma2_{t-1} for t = 1..n (the estimates before seeing x_t), as the
    predictable plug-ins of Waudby-Smith & Ramdas use them; shape of `x`, along the last axis."""
    import numpy as np

    n = x.shape[-1]
    t = np.arange(1, n + 1, dtype=float)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)  # mu_hat_t
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)  # sigma2_t
    before = np.full((*x.shape[:-1], 1), 0.5)
    mu_prev = np.concatenate([before, mu[..., :-1]], axis=-1)
    sigma2_prev = np.concatenate([before / 2, sigma2[..., :-1]], axis=-1)
    return mu_prev, sigma2_prev


def eb_confidence_sequence(
    values: Sequence[float] | np.ndarray,
    alpha: float = 0.05,
    c: float = TRUNCATION,
    target: float | None = None,
) -> ConfidenceSequence:
    """The two-sided PrPl-EB confidence sequence at level 1 - alpha after each value (values
    in [0, 1], in the order they were observed; a leading batch axis is allowed); with a
    target half-width (> 0), the bets tuned to it (see the module text)."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    if x.shape[-1] == 0:
        return ConfidenceSequence(np.zeros(x.shape), np.ones(x.shape))
    if np.any((x < 0) | (x > 1)):
        raise ValueError("confidence sequences here are for values in [0, 1]")
    n = x.shape[-1]
    t = np.arange(1, n + 1, dtype=float)
    log_term = np.log(2 / alpha)
    mu_prev, sigma2_prev = smoothed_moments(x)
    if target:
        lam = np.minimum(target / sigma2_prev, c)
    else:
        lam = np.minimum(np.sqrt(2 * log_term / (sigma2_prev * t * np.log1p(t))), c)
    v = 4 * (x - mu_prev) ** 2
    psi = (-np.log1p(-lam) - lam) / 4
    sum_lam = np.cumsum(lam, axis=-1)
    centre = np.cumsum(lam * x, axis=-1) / sum_lam
    margin = (log_term + np.cumsum(v * psi, axis=-1)) / sum_lam
    lower = np.maximum.accumulate(np.clip(centre - margin, 0.0, 1.0), axis=-1)
    upper = np.minimum.accumulate(np.clip(centre + margin, 0.0, 1.0), axis=-1)
    upper = np.maximum(upper, lower)  # an empty intersection (probability <= alpha): a point
    return ConfidenceSequence(lower, upper)


def method_text(target: float | None) -> str:
    """The report's `sequential.method`: the confidence sequence and its bets."""
    if target:
        return f"{METHOD}, bets lambda_t = min(H / sigma2_(t-1), {TRUNCATION:g}) tuned to H"
    bets = "sqrt(2 log(2/alpha) / (sigma2_(t-1) t log(1+t)))"
    return f"{METHOD}, bets lambda_t = min({bets}, {TRUNCATION:g})"


def final_interval(
    values: Sequence[Any], alpha: float = 0.05, target: float | None = None
) -> tuple[float, float]:
    """The confidence sequence's interval after the last of `values` (in observed order)."""
    found = eb_confidence_sequence([float(v) for v in values], alpha, target=target)
    if found.lower.size == 0:
        return (0.0, 1.0)
    return float(found.lower[-1]), float(found.upper[-1])
