"""The one bootstrap (results/stats/bootstrap.py) and intervals that hold their value.

The resampler: seeded, paired (one draw for every array), the weighted and the drawn form
agree, chunking does not change the draws, a Generator continues its stream. The interval:
every reported interval contains its estimate, for every metric of the registry on random
per-sample values (hypothesis) and for every metric and aggregate of the reports in
reports/demo/, stored and recomputed from their per-sample values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robench.results.report.schema import Report
from robench.results.stats import bootstrap as bootstrap_module
from robench.results.stats.aggregates import compute_aggregates
from robench.results.stats.bootstrap import (
    Z_95,
    bootstrap,
    centred_interval,
    paired_summary,
    weighted_mean,
)
from robench.results.stats.metrics import METRICS, find_metric, wilson_interval

ROOT = Path(__file__).resolve().parents[1]
DEMO_REPORTS = sorted((ROOT / "reports" / "demo").glob("*.json"))


# --- the resampler ----------------------------------------------------------------------


def test_weighted_and_drawn_forms_give_the_same_means() -> None:
    values = np.random.default_rng(1).normal(size=37)
    weighted = bootstrap(weighted_mean, values, n_resamples=300, seed=4)
    drawn = bootstrap(lambda v: v.mean(axis=1), values, n_resamples=300, seed=4, weighted=False)
    np.testing.assert_allclose(weighted, drawn, rtol=1e-12)
    assert not np.array_equal(weighted, bootstrap(weighted_mean, values, n_resamples=300, seed=5))


def test_the_draws_are_numpys_integers_of_the_seed() -> None:
    drawn = np.random.default_rng(7).integers(0, 11, size=(50, 11))
    found = bootstrap(lambda i: i, np.arange(11), n_resamples=50, seed=7, weighted=False)
    np.testing.assert_array_equal(found, drawn)


def test_chunking_does_not_change_the_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.random.default_rng(2).normal(size=(101, 3))

    def sums(weights: np.ndarray, v: np.ndarray) -> np.ndarray:
        return weights @ v

    def drawn_sums(v: np.ndarray) -> np.ndarray:
        return v.sum(axis=1)

    whole = bootstrap(sums, values, n_resamples=64, seed=3)
    whole_drawn = bootstrap(drawn_sums, values, n_resamples=64, seed=3, weighted=False)
    monkeypatch.setattr(bootstrap_module, "_CHUNK", 101 * 5)  # 5 resamples a chunk
    monkeypatch.setattr(bootstrap_module, "_CACHE_BYTES", 0)  # and no kept draws
    np.testing.assert_allclose(bootstrap(sums, values, n_resamples=64, seed=3), whole)
    chunked = bootstrap(drawn_sums, values, n_resamples=64, seed=3, weighted=False)
    np.testing.assert_allclose(chunked, whole_drawn)
    np.testing.assert_allclose(whole, whole_drawn, rtol=1e-12)


def test_paired_arrays_share_one_draw() -> None:
    base = np.arange(20, dtype=float)
    diffs = bootstrap(
        lambda w, b, c: weighted_mean(w, c) - weighted_mean(w, b),
        base,
        base + 1.5,
        n_resamples=200,
        seed=0,
    )
    np.testing.assert_allclose(diffs, 1.5)  # the same samples drawn for both: no spread


def test_a_generator_continues_its_stream() -> None:
    values = np.arange(9, dtype=float)
    rng = np.random.default_rng(0)
    first = bootstrap(weighted_mean, values, n_resamples=10, seed=rng)
    second = bootstrap(weighted_mean, values, n_resamples=10, seed=rng)
    both = bootstrap(weighted_mean, values, n_resamples=20, seed=np.random.default_rng(0))
    np.testing.assert_allclose(np.concatenate([first, second]), both, rtol=1e-12)


@pytest.mark.parametrize(
    ("arrays", "kwargs", "message"),
    [
        ((), {}, "at least one array"),
        ((np.zeros(3), np.zeros(4)), {}, "differ in length"),
        ((np.zeros(0),), {}, "at least one sample"),
        ((np.zeros(3),), {"n_resamples": 0}, "n_resamples"),
    ],
)
def test_bad_arguments_are_refused(arrays: tuple, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bootstrap(weighted_mean, *arrays, **kwargs)


# --- the interval ------------------------------------------------------------------------


def test_interval_is_the_estimate_plus_minus_196_bootstrap_standard_errors() -> None:
    replicates = np.array([1.0, 2.0, 4.0, np.nan, np.inf])
    half = Z_95 * np.std([1.0, 2.0, 4.0], ddof=1)
    assert centred_interval(10.0, replicates) == pytest.approx((10 - half, 10 + half))
    assert centred_interval(0.1, replicates, (0.0, 1.0)) == pytest.approx((0.0, 1.0))
    assert all(map(math.isnan, centred_interval(math.nan, replicates)))
    assert all(map(math.isnan, centred_interval(1.0, np.array([np.nan]))))


@settings(max_examples=200, deadline=None)
@given(
    estimate=st.floats(-1e6, 1e6),
    replicates=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=30),
)
def test_centred_interval_holds_its_estimate(estimate: float, replicates: list[float]) -> None:
    low, high = centred_interval(estimate, np.array(replicates))
    assert low <= estimate <= high
    _, (low, high), _, _ = paired_summary(estimate, np.array(replicates), 10, "greater")
    assert low <= estimate <= high


@settings(max_examples=300, deadline=None)
@given(n=st.integers(0, 5000), data=st.data())
def test_wilson_interval_holds_the_proportion_despite_rounding(n: int, data: Any) -> None:
    successes = data.draw(st.integers(0, n))
    low, high = wilson_interval(successes, n)
    if n:
        assert low <= successes / n <= high
    assert wilson_interval(n, n)[1] == 1.0 if n else True


# Random per-sample values of every registered metric, as its `per_sample` makes them.
_unit = st.floats(0.0, 1.0)
_bit = st.sampled_from([0.0, 1.0])


def _attacked(value: st.SearchStrategy[float]) -> st.SearchStrategy[tuple[float, float]]:
    """(value x attacked, attacked) pairs of text-attack ratio metrics."""
    return st.tuples(value, _bit).map(lambda p: (p[0] * p[1], p[1]))


def _counts(k: int) -> st.SearchStrategy[list[float]]:
    """One image's flattened (4, K) pixel counts: intersect, union, pred and label areas."""

    def build(rows: list[tuple[int, int, int]]) -> list[float]:
        inter = [min(i, p, lab) for i, p, lab in rows]
        pred = [p for _, p, _ in rows]
        label = [lab for _, _, lab in rows]
        union = [p + lab - i for i, p, lab in zip(inter, pred, label, strict=True)]
        return [float(v) for v in inter + union + pred + label]

    cell = st.integers(0, 50)
    return st.lists(st.tuples(cell, cell, cell), min_size=k, max_size=k).map(build)


_RATIO = st.tuples(st.floats(0.0, 500.0), st.floats(1.0, 300.0))
PER_SAMPLE: dict[str, st.SearchStrategy[Any]] = {
    "top1": st.booleans(),
    "top5": st.booleans(),
    "ece": st.tuples(_unit, _bit),
    "nll": st.floats(0.0, 30.0),
    "brier": st.floats(0.0, 2.0),
    "perplexity": _RATIO,
    "word_perplexity": _RATIO,
    "bits_per_byte": _RATIO,
    "byte_perplexity": _RATIO,
    "miou": _counts(3),
    "pixel_accuracy": _counts(3),
    "mean_accuracy": _counts(3),
    "attack_success_rate": st.tuples(_bit, _bit).map(lambda p: (p[0] * p[1], p[1])),
    "queries_mean": _attacked(st.floats(0.0, 1000.0)),
    "queries_median": _attacked(st.integers(0, 1000).map(float)),
    "perturbed_word_share": st.tuples(_unit, _bit).map(lambda p: (p[0] * p[1], p[1])),
    "smoothed_accuracy": st.booleans(),
    "certified_accuracy": st.booleans(),
    "acr": st.tuples(st.floats(0.0, 3.0), st.just(1.0)),
    "abstention_rate": st.booleans(),
}


def test_every_registered_metric_has_a_random_input() -> None:
    assert sorted(PER_SAMPLE) == sorted(METRICS)


def _holds(
    summarize: Callable[[list[Any]], tuple[float, tuple[float, float]]], values: list
) -> None:
    value, (low, high) = summarize(values)
    if math.isnan(value):
        return  # undefined (no attacked sample): the report stores no interval to check
    if math.isnan(low):  # a single defining sample: the report stores (value, value)
        return
    assert low <= value <= high, (value, low, high)


@pytest.mark.parametrize("name", sorted(PER_SAMPLE))
def test_every_metric_interval_holds_its_value_on_random_inputs(name: str) -> None:
    metric = METRICS.get(name)

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(values=st.lists(PER_SAMPLE[name], min_size=1, max_size=40))
    def check(values: list[Any]) -> None:
        _holds(metric.summarize, values)

    check()


# --- the demo reports -----------------------------------------------------------------


@pytest.mark.parametrize("path", DEMO_REPORTS, ids=lambda p: p.name)
def test_every_interval_of_a_demo_report_holds_its_value_and_is_current(path: Path) -> None:
    """Stored intervals hold their values, and equal what this robench computes from the
    report's per-sample values (so the shipped reports show the documented method)."""
    report = Report.model_validate_json(path.read_text())
    checked = 0
    for result in report.results:
        for name, stored in result.metrics.items():
            assert stored.ci95 is not None
            assert stored.ci95[0] <= stored.value <= stored.ci95[1], (result.name, name)
            metric = find_metric(name)
            values = metric.values_in(report, result.name) if metric else None
            if values is None:
                continue
            value, interval = metric.summarize(list(np.asarray(values).tolist()))
            if any(map(math.isnan, interval)):
                interval = (value, value)
            assert interval == pytest.approx(stored.ci95, rel=1e-9, abs=1e-12), (result.name, name)
            checked += 1
    kinds = list(dict.fromkeys(a.kind for a in report.aggregates))
    for stored, again in zip(report.aggregates, compute_aggregates(report, kinds), strict=True):
        if stored.ci95 is None or stored.value is None:
            continue
        assert stored.ci95[0] <= stored.value <= stored.ci95[1], stored.name
        assert again.ci95 == pytest.approx(stored.ci95, rel=1e-9, abs=1e-12), stored.name
        checked += 1
    assert checked > 0
