"""The statistics of randomized smoothing's certificates (Cohen, Rosenfeld and Kolter, "Certified
Adversarial Robustness via Randomized Smoothing", ICML 2019, https://arxiv.org/abs/1902.02918).

CERTIFY counts, among n noisy copies x + N(0, sigma^2 I), how often the base classifier
returns the candidate class cA; from that count nA:

    pA     = the one-sided (1 - alpha) Clopper-Pearson lower bound of P(f(x + noise) = cA)
           = the alpha quantile of Beta(nA, n - nA + 1)            (0 when nA = 0)
    radius = sigma * Phi^-1(pA)      if pA > 1/2, else abstain

With probability at least 1 - alpha over the noise, the smoothed classifier predicts cA
everywhere within L2 distance `radius` of x (Theorem 1 with pB = 1 - pA). Cohen et al.'s
`core.py` takes `proportion_confint(nA, n, alpha=2 * alpha, method="beta")[0]`, which is this
quantile (statsmodels' two-sided interval at 2 alpha); it abstains when pA < 1/2, and robench
when pA <= 1/2, where the radius would be 0 (pA = 1/2 exactly needs nA / n well above 1/2 and is
never met in practice).

The metrics' certified radius (right and not abstained, else 0; certified at r when > r):
docs/formats.md, "Randomized smoothing". Torch-free; scipy is imported where it is used.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# The per-sample columns a randomized-smoothing result records (its parameters' `columns`).
CANDIDATE = "candidate"  # cA, the class the n0 selection draws voted for most
COUNT_SELECTION = "count_selection"  # cA's votes among the n0 selection draws
COUNT_ESTIMATION = "count_estimation"  # nA: cA's votes among the n estimation draws
P_LOWER = "p_lower"  # pA, the Clopper-Pearson lower bound
RADIUS = "radius"  # sigma Phi^-1(pA), or 0.0 when abstained
ABSTAINED = "abstained"  # pA <= 1/2: the smoothed classifier gives no prediction
PREDICTION = "smoothed_prediction"  # cA, or None when abstained
COLUMNS = (CANDIDATE, COUNT_SELECTION, COUNT_ESTIMATION, P_LOWER, RADIUS, ABSTAINED, PREDICTION)
# What an attack on the smoothed classifier (`smoothed-pgd`) records: PREDICT at its image.
PREDICT_COLUMNS = (PREDICTION, ABSTAINED)


def clopper_pearson_lower(successes: int, trials: int, alpha: float) -> float:
    """The one-sided 1 - alpha Clopper-Pearson lower bound of a binomial proportion: the alpha
    quantile of Beta(k, n - k + 1); 0 when k = 0."""
    if not 0 <= successes <= trials or trials <= 0:
        raise ValueError(f"need 0 <= successes <= trials, trials > 0; got {successes}/{trials}")
    if successes == 0:
        return 0.0
    from scipy.stats import beta

    return float(beta.ppf(alpha, successes, trials - successes + 1))


def certify_counts(
    count_estimation: int, n: int, alpha: float, sigma: float
) -> tuple[float, float | None]:
    """(pA, the radius sigma * Phi^-1(pA), or None (abstain) when pA <= 1/2) from the
    candidate's estimation count nA of n."""
    p_lower = clopper_pearson_lower(count_estimation, n, alpha)
    if p_lower <= 0.5:
        return p_lower, None
    from scipy.stats import norm

    return p_lower, float(sigma * norm.ppf(p_lower))


def predict_abstains(count_top: int, count_runner_up: int, alpha: float) -> bool:
    """Cohen et al.'s PREDICT: abstain unless the two-sided binomial test of the top class's
    count against the runner-up's (p = 1/2) rejects at level alpha; a returned class is the
    smoothed classifier's with probability >= 1 - alpha."""
    from scipy.stats import binomtest

    trials = count_top + count_runner_up
    return trials == 0 or binomtest(count_top, trials, 0.5).pvalue > alpha


def correct_and_certified(record: Mapping[str, Any]) -> bool:
    """The smoothed classifier predicts the sample's label (it did not abstain)."""
    return not record[ABSTAINED] and record[PREDICTION] == record["y"]


def certified_radius_of(record: Mapping[str, Any]) -> float:
    """The radius a sample is certified correct within: its radius when the smoothed
    prediction is right, else 0 (wrong or abstained: certified nowhere)."""
    return float(record[RADIUS]) if correct_and_certified(record) else 0.0


def certified_at(record: Mapping[str, Any], radius: float) -> bool:
    """Certified correct at L2 radius r: right, and certified radius > r."""
    return correct_and_certified(record) and float(record[RADIUS]) > radius


def is_radius(value: Any) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return number and math.isfinite(value) and value >= 0
