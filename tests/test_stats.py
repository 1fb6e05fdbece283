"""Exact McNemar, the paired bootstrap and the sample-size estimates, against hand values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robench.results.stats.paired_tests import (
    binomial_upper_tail,
    discordant_pairs,
    mcnemar_exact,
    mcnemar_samples_needed,
    mean_samples_needed,
    paired_bootstrap,
)

Z_95_ONE_SIDED = 1.6448536269514722  # Phi^-1(0.95)
Z_80 = 0.8416212335729143  # Phi^-1(0.80)


def test_binomial_upper_tail_hand_values() -> None:
    assert binomial_upper_tail(10, 10) == 0.5**10
    assert binomial_upper_tail(10, 0) == 1.0
    assert binomial_upper_tail(10, 11) == 0.0
    assert binomial_upper_tail(10, 7) == (120 + 45 + 10 + 1) / 1024
    assert binomial_upper_tail(10, 3) == 1 - (1 + 10 + 45) / 1024  # summed via the lower side
    assert binomial_upper_tail(0, 0) == 1.0


def test_mcnemar_one_sided_all_discordant_pairs_against_candidate() -> None:
    assert mcnemar_exact(10, 0, "greater") == 0.5**10
    assert mcnemar_exact(10, 0, "two-sided") == 2 * 0.5**10
    assert mcnemar_exact(10, 0, "less") == 1.0


def test_mcnemar_mixed_counts() -> None:
    # b=3, c=7, n=10: P(X >= 3) = 968/1024, P(X >= 7) = 176/1024.
    assert mcnemar_exact(3, 7, "greater") == pytest.approx(968 / 1024, abs=1e-15)
    assert mcnemar_exact(3, 7, "less") == pytest.approx(176 / 1024, abs=1e-15)
    assert mcnemar_exact(3, 7, "two-sided") == pytest.approx(352 / 1024, abs=1e-15)
    assert mcnemar_exact(7, 3, "two-sided") == mcnemar_exact(3, 7, "two-sided")
    assert mcnemar_exact(5, 5, "two-sided") == 1.0  # capped at 1
    assert mcnemar_exact(0, 0, "greater") == 1.0
    assert mcnemar_exact(2, 0, "greater") == 0.25


def test_mcnemar_large_counts_agree_with_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for b, c in [(600, 400), (30, 12), (1234, 1301)]:
        expected = scipy_stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue
        assert mcnemar_exact(b, c, "greater") == pytest.approx(expected, rel=1e-9)
        expected = scipy_stats.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
        assert mcnemar_exact(b, c, "two-sided") == pytest.approx(expected, rel=1e-9)


def test_mcnemar_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="discordant counts"):
        mcnemar_exact(-1, 2)
    with pytest.raises(ValueError, match="alternative"):
        mcnemar_exact(1, 2, "worse")  # type: ignore[arg-type]


def test_discordant_pairs() -> None:
    base = [True, True, False, False, True]
    cand = [True, False, True, False, False]
    assert discordant_pairs(base, cand) == (2, 1)
    with pytest.raises(ValueError, match="differ in length"):
        discordant_pairs([True], [True, False])


def _shifted(n: int = 500, shift: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(123)
    baseline = rng.normal(3.0, 1.0, n)
    candidate = baseline + shift + rng.normal(0.0, 0.5, n)
    return baseline, candidate


def test_paired_bootstrap_is_deterministic_under_a_seed() -> None:
    baseline, candidate = _shifted()
    first = paired_bootstrap(baseline, candidate, n_resamples=2000, seed=7)
    again = paired_bootstrap(baseline, candidate, n_resamples=2000, seed=7)
    other = paired_bootstrap(baseline, candidate, n_resamples=2000, seed=8)
    assert first == again
    assert first.ci95 != other.ci95
    assert first.mean_diff == other.mean_diff  # the observed mean does not depend on the seed


def test_paired_bootstrap_interval_contains_the_true_shift() -> None:
    baseline, candidate = _shifted(shift=0.3)
    result = paired_bootstrap(baseline, candidate, n_resamples=4000, seed=0)
    low, high = result.ci95
    assert low < 0.3 < high
    assert result.mean_diff == pytest.approx(float(np.mean(candidate - baseline)))
    assert abs(result.mean_diff - 0.3) < 0.1
    # Standard error of the mean difference is about 0.5 / sqrt(500) = 0.022: a narrow interval.
    assert high - low == pytest.approx(2 * 1.96 * 0.5 / math.sqrt(500), rel=0.2)
    # A shift of 0.3 is ~13 standard errors: every resample agrees with "greater".
    greater = paired_bootstrap(baseline, candidate, 4000, 0, alternative="greater")
    assert greater.p_value == pytest.approx(1 / 4001)
    less = paired_bootstrap(baseline, candidate, 4000, 0, alternative="less")
    assert less.p_value > 0.99


def test_paired_bootstrap_without_difference() -> None:
    values = np.linspace(0.0, 1.0, 101)
    result = paired_bootstrap(values, values.copy(), n_resamples=500, seed=0)
    assert result.mean_diff == 0.0
    assert result.ci95 == (0.0, 0.0)
    assert result.p_value == 1.0


def test_paired_bootstrap_chunks_large_inputs_deterministically() -> None:
    baseline, candidate = _shifted(n=5000, shift=-0.1)  # 800 resamples per chunk
    first = paired_bootstrap(baseline, candidate, n_resamples=2000, seed=1, alternative="less")
    assert first == paired_bootstrap(baseline, candidate, 2000, 1, alternative="less")
    assert first.ci95[0] < -0.1 < first.ci95[1]


def test_paired_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="equal length"):
        paired_bootstrap([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="at least one"):
        paired_bootstrap([], [])
    with pytest.raises(ValueError, match="n_resamples"):
        paired_bootstrap([1.0], [2.0], n_resamples=0)


def test_mcnemar_samples_needed_connor_formula() -> None:
    # b=2, c=0 of 50: psi = delta = 0.04.
    root = Z_95_ONE_SIDED * math.sqrt(0.04) + Z_80 * math.sqrt(0.04 - 0.04**2)
    assert mcnemar_samples_needed(2, 0, 50) == math.ceil(root**2 / 0.04**2) == 153
    # b=30, c=10 of 1000: psi = 0.04, delta = 0.02.
    root = Z_95_ONE_SIDED * math.sqrt(0.04) + Z_80 * math.sqrt(0.04 - 0.02**2)
    assert mcnemar_samples_needed(30, 10, 1000) == math.ceil(root**2 / 0.02**2)
    assert mcnemar_samples_needed(3, 3, 100) is None  # no drop to detect
    assert mcnemar_samples_needed(1, 4, 100) is None
    # With power 1/2 (z_power = 0) it is the n at which the observed drop reaches z_alpha.
    assert mcnemar_samples_needed(2, 0, 50, power=0.5) == math.ceil(
        Z_95_ONE_SIDED**2 * 0.04 / 0.04**2
    )


def test_mean_samples_needed() -> None:
    expected = math.ceil(((Z_95_ONE_SIDED + Z_80) * 1.0 / 0.5) ** 2)
    assert mean_samples_needed(-0.5, 1.0) == expected == 25
    assert mean_samples_needed(0.0, 1.0) is None
    with pytest.raises(ValueError, match="alpha"):
        mean_samples_needed(0.5, 1.0, alpha=1.5)
