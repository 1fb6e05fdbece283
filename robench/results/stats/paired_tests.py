"""Paired statistics for gates: exact McNemar, a paired bootstrap and sample-size estimates.

Two reports of the same suite on the same samples are paired. McNemar's test, the paired
bootstrap of real values and the sample sizes (Connor 1987 for McNemar, the paired-mean
formula for real values; both take the observed effect as the true one): docs/ci.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal, NamedTuple

from robench.results.stats.bootstrap import bootstrap, bootstrap_p_value, centred_interval

# numpy is imported where it is used: `robench compare` reads reports without it.
if TYPE_CHECKING:
    import numpy as np

Alternative = Literal["two-sided", "greater", "less"]
"""`greater`: b > c for McNemar (candidate worse), mean(candidate - baseline) > 0 for the
bootstrap; `less` the opposite; `two-sided` either way."""


def binomial_upper_tail(n: int, k: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2), exact (integer arithmetic, then one division)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    # Sum the shorter side: sum_{i>=k} C(n, i) or 2**n - sum_{i<k} C(n, i).
    upper = n - k + 1 <= k
    start, stop = (k, n + 1) if upper else (0, k)
    term = math.comb(n, start)
    total = 0
    for i in range(start, stop):
        total += term
        term = term * (n - i) // (i + 1)
    count = total if upper else 2**n - total
    return count / 2**n


# alternative -> the p-value of the discordant counts (b, c)
_MCNEMAR: dict[str, Callable[[int, int], float]] = {
    "two-sided": lambda b, c: min(1.0, 2.0 * binomial_upper_tail(b + c, max(b, c))),
    "greater": lambda b, c: binomial_upper_tail(b + c, b),
    "less": lambda b, c: binomial_upper_tail(b + c, c),
}


def mcnemar_exact(b: int, c: int, alternative: Alternative = "two-sided") -> float:
    """Exact McNemar p-value from the discordant counts.

    b: pairs where the baseline is right and the candidate wrong; c: the reverse.
    `greater` tests H1 "candidate worse" (p = P(Binomial(b + c, 1/2) >= b)); `two-sided` is
    twice the smaller tail, capped at 1.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if alternative not in _MCNEMAR:
        raise ValueError(f"alternative must be one of {sorted(_MCNEMAR)}, got {alternative!r}")
    return _MCNEMAR[alternative](b, c)


def discordant_pairs(
    baseline: Sequence[bool] | np.ndarray, candidate: Sequence[bool] | np.ndarray
) -> tuple[int, int]:
    """(b, c): samples only the baseline got right, and samples only the candidate got right.

    Plain Python: a gate of two reports counts a few thousand pairs, less than importing
    numpy costs."""
    if len(baseline) != len(candidate):
        raise ValueError(f"paired sequences differ in length: {len(baseline)} vs {len(candidate)}")
    pairs = [(bool(x), bool(y)) for x, y in zip(baseline, candidate, strict=True)]
    return sum(x and not y for x, y in pairs), sum(y and not x for x, y in pairs)


class BootstrapResult(NamedTuple):
    """Mean of candidate - baseline, its 95% interval (`bootstrap.centred_interval`) and a
    bootstrap p-value."""

    mean_diff: float
    ci95: tuple[float, float]
    p_value: float


def paired_bootstrap(
    baseline_values: Sequence[float] | np.ndarray,
    candidate_values: Sequence[float] | np.ndarray,
    n_resamples: int = 10_000,
    seed: int = 0,
    *,
    alternative: Alternative = "two-sided",
) -> BootstrapResult:
    """Paired bootstrap of the mean difference `candidate - baseline` over samples, a
    sample's two values drawn together: `bootstrap.centred_interval` and
    `bootstrap_p_value`. Deterministic for a given seed."""
    import numpy as np

    base = np.asarray(baseline_values, dtype=float)
    cand = np.asarray(candidate_values, dtype=float)
    if base.ndim != 1 or base.shape != cand.shape:
        raise ValueError(
            f"paired 1-d sequences of equal length needed: {base.shape} vs {cand.shape}"
        )
    if base.size == 0:
        raise ValueError("paired_bootstrap needs at least one sample")
    if alternative not in _MCNEMAR:
        raise ValueError(f"alternative must be one of {sorted(_MCNEMAR)}, got {alternative!r}")
    diff = cand - base
    observed = float(diff.mean())
    means = bootstrap(
        lambda d: d.mean(axis=1), diff, n_resamples=n_resamples, seed=seed, weighted=False
    )
    return BootstrapResult(
        observed,
        centred_interval(observed, means),
        bootstrap_p_value(means, observed, alternative),
    )


def _z(alpha: float, power: float) -> tuple[float, float]:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power}")
    unit = NormalDist()
    return unit.inv_cdf(1 - alpha), unit.inv_cdf(power)


def mcnemar_samples_needed(
    b: int, c: int, n: int, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Samples a one-sided McNemar test needs to detect the observed drop (Connor, 1987).

    Takes the observed discordance rates p_b = b/n and p_c = c/n as the truth, with
    psi = p_b + p_c and delta = p_b - p_c:
    n = (z_{1-alpha} sqrt(psi) + z_power sqrt(psi - delta^2))^2 / delta^2.
    None when the candidate is not worse (delta <= 0) or n is 0.
    """
    if n <= 0 or b <= c:
        return None
    z_alpha, z_power = _z(alpha, power)
    psi, delta = (b + c) / n, (b - c) / n
    root = z_alpha * math.sqrt(psi) + z_power * math.sqrt(max(psi - delta * delta, 0.0))
    return math.ceil(root * root / (delta * delta))


def mean_samples_needed(
    mean_diff: float, sd_diff: float, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Samples a one-sided paired test of means needs to detect `mean_diff` (normal approx.).

    n = ((z_{1-alpha} + z_power) * sd / |mean_diff|)^2, with sd the standard deviation of the
    per-sample differences. None when mean_diff is 0.
    """
    if mean_diff == 0:
        return None
    z_alpha, z_power = _z(alpha, power)
    return max(2, math.ceil(((z_alpha + z_power) * sd_diff / abs(mean_diff)) ** 2))
