"""The confidence sequence and the sequential paired test, by seeded simulation: coverage at a
data-dependent stopping time, and the type-I error of the paired test under its null."""

from __future__ import annotations

import numpy as np
import pytest

from robench.results.stats.confidence_sequences import eb_confidence_sequence, final_interval
from robench.results.stats.metrics import wilson_interval
from robench.results.stats.sequential_test import (
    log_wealth,
    paired_differences,
    sequential_paired_test,
)

RUNS = 2000  # seeded simulated runs per check
N_MAX = 2000  # samples available to each run
CHECK_EVERY = 64  # the run looks at its interval after every chunk of this many samples
MEANS = (0.02, 0.3, 0.5, 0.86)  # true means, cycled over the runs (near 0 and 1 included)


def _bernoulli_runs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    means = np.array(MEANS)[np.arange(RUNS) % len(MEANS)]
    return (rng.random((RUNS, N_MAX)) < means[:, None]).astype(float), means


def _stopping_times(halfwidth: np.ndarray, target: float) -> np.ndarray:
    """The first checked n (0-based position) with half-width <= target, else the last."""
    checked = np.arange(CHECK_EVERY, N_MAX + 1, CHECK_EVERY) - 1
    narrow = halfwidth[:, checked] <= target
    first = np.where(narrow.any(axis=1), narrow.argmax(axis=1), len(checked) - 1)
    return checked[first]


@pytest.mark.parametrize("tuned", [True, False], ids=["bets tuned to H", "default bets"])
@pytest.mark.parametrize("target", [0.1, 0.05, 0.03])
def test_coverage_at_the_stopping_time_is_at_least_95_percent(target: float, tuned: bool) -> None:
    """`eval --target-halfwidth H` as simulated: check every 64 samples, stop at the first
    half-width <= H (or at 2,000), and see whether the interval there covers the mean."""
    x, means = _bernoulli_runs(seed=28)
    cs = eb_confidence_sequence(x, alpha=0.05, target=target if tuned else None)
    stop = _stopping_times(cs.halfwidth, target)
    rows = np.arange(RUNS)
    covered = (cs.lower[rows, stop] <= means) & (means <= cs.upper[rows, stop])
    # Measured over 2000 runs (seed 28), targets 0.1, 0.05 and 0.03: tuned bets 0.995, 0.9885
    # and 0.9865 (median stop at 192, 576 and 1280 samples); default bets 0.996, 0.9935 and
    # 0.9935 (192, 768 and 1984). 95% is the guarantee.
    assert covered.mean() >= 0.95
    assert (stop < N_MAX - 1).mean() > 0.5  # most runs did stop early


@pytest.mark.parametrize("target", [None, 0.05])
def test_coverage_holds_at_every_time_at_once(target: float | None) -> None:
    """The running intersection misses the mean at the end iff it ever missed it: this is
    coverage under the worst stopping rule ("stop as soon as the interval excludes mu")."""
    x, means = _bernoulli_runs(seed=7)
    cs = eb_confidence_sequence(x, alpha=0.05, target=target)
    ever_covered = (cs.lower[:, -1] <= means) & (means <= cs.upper[:, -1])
    assert ever_covered.mean() >= 0.95  # measured 0.9875 and 0.977 over 2000 runs (seed 7)
    if target is not None:
        return
    # The simulation can see a broken interval: Wilson checked after every chunk misses the
    # mean at some check in far more than 5% of the runs.
    checked = np.arange(CHECK_EVERY, N_MAX + 1, CHECK_EVERY)
    sums = np.cumsum(x, axis=1)[:, checked - 1]
    missed = np.zeros(RUNS, dtype=bool)
    for j, n in enumerate(checked):
        for run in range(0, RUNS, 5):  # every fifth run keeps this loop short
            low, high = wilson_interval(int(sums[run, j]), int(n))
            missed[run] |= not low <= means[run] <= high
    assert missed[::5].mean() > 0.1  # 0.28 over all 2000 runs


def test_the_sequence_narrows_and_stays_in_the_unit_interval() -> None:
    rng = np.random.default_rng(0)
    cs = eb_confidence_sequence(rng.random(3000) < 0.8)
    assert np.all(cs.lower >= 0) and np.all(cs.upper <= 1)
    assert np.all(np.diff(cs.halfwidth) <= 1e-15)  # a running intersection never widens
    assert cs.halfwidth[-1] < 0.04 < cs.halfwidth[100]
    assert final_interval([]) == (0.0, 1.0)
    with pytest.raises(ValueError):
        eb_confidence_sequence([0.5, 2.0])


def _paired_runs(seed: int, mean_d: float, discordant: float, n: int = 1000) -> np.ndarray:
    """y = (d + 1) / 2 of RUNS runs of paired binary differences with mean `mean_d`."""
    rng = np.random.default_rng(seed)
    p_down = (discordant - mean_d) / 2
    d = rng.choice([-1, 0, 1], p=[p_down, 1 - discordant, discordant - p_down], size=(RUNS, n))
    return (d + 1) / 2


@pytest.mark.parametrize(
    ("mean_d", "discordant"),
    [(0.0, 0.0), (0.0, 0.1), (-0.02, 0.1), (-0.02, 0.3)],  # no difference; at the boundary
)
def test_paired_test_false_regressions_at_most_alpha(mean_d: float, discordant: float) -> None:
    """Under "no regression beyond the tolerance" (mean difference >= -0.02), however long
    the run goes on, the test declares a regression in at most alpha of the runs."""
    alpha, tolerance = 0.05, 0.02
    y = _paired_runs(seed=11, mean_d=mean_d, discordant=discordant)
    _, down = log_wealth(y, (1 - tolerance) / 2)
    false_regressions = (down.max(axis=1) >= np.log(1 / alpha)).mean()
    assert false_regressions <= alpha  # measured 0, 0, 0.016 and 0.027 over 2000 runs each


def test_paired_test_false_passes_at_most_alpha() -> None:
    """At the boundary from the other side: a real regression of exactly the tolerance is
    declared within tolerance in at most alpha of the runs."""
    alpha, tolerance = 0.05, 0.02
    y = _paired_runs(seed=12, mean_d=-tolerance, discordant=0.1)
    up, _ = log_wealth(y, (1 - tolerance) / 2)
    assert (up.max(axis=1) >= np.log(1 / alpha)).mean() <= alpha  # measured 0.0235


def test_paired_test_settles_identical_and_clearly_worse_candidates_early() -> None:
    same = paired_differences([1, 0, 1, 1] * 250, [1, 0, 1, 1] * 250, higher=True)
    verdict = sequential_paired_test(same, tolerance=0.02, alpha=0.05)
    assert verdict.within_tolerance and not verdict.regressed
    first = next(
        n for n in range(64, 1001, 64) if sequential_paired_test(same[:n], 0.02, 0.05).settled
    )
    assert first <= 320
    worse = paired_differences([1] * 400, [1, 0] * 200, higher=True)  # 50 pp worse
    verdict = sequential_paired_test(worse[:64], tolerance=0.02, alpha=0.05)
    assert verdict.regressed and verdict.mean_difference == -0.5
    lower_better = paired_differences([0.0, 1.0], [1.0, 1.0], higher=False)
    assert list(lower_better) == [0.0, 0.5]
