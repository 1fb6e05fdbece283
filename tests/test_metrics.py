"""The metric registry: per-sample values, aggregation, intervals, display and direction,
and that compare, tables and gate read them from the registry."""

from __future__ import annotations

import math

import numpy as np
import pytest
from report_factory import flip, make_report

from robench._core.registry import Registry
from robench.results.compare.comparison import build_comparison
from robench.results.compare.formats import COMPARE_FORMATS
from robench.results.compare.tables import markdown_fitting, report_rows
from robench.results.gate.checks import display_amount
from robench.results.gate.regression import run_gate
from robench.results.stats import metrics as metrics_module
from robench.results.stats.metrics import (
    METRICS,
    Metric,
    MetricDisplay,
    extended_registry,
    find_metric,
    metric_display,
    wilson_interval,
)


def test_builtin_metrics_carry_everything() -> None:
    assert METRICS.names() == [
        "abstention_rate",
        "acr",
        "attack_success_rate",
        "bits_per_byte",
        "brier",
        "byte_perplexity",
        "certified_accuracy",
        "ece",
        "mean_accuracy",
        "miou",
        "nll",
        "perplexity",
        "perturbed_word_share",
        "pixel_accuracy",
        "queries_mean",
        "queries_median",
        "smoothed_accuracy",
        "top1",
        "top5",
        "word_perplexity",
    ]
    for name, label in (("top1", "top-1"), ("top5", "top-5")):
        metric = METRICS.get(name)
        assert metric.higher_is_better and metric.paired_test == "binary"
        assert metric.display == MetricDisplay(label, 100.0, "%", "pp")
        assert metric.applies_to("image-classification")
        assert metric.applies_to("text-classification")
        assert not metric.applies_to("language-modeling")


def test_top_k_per_sample_aggregate_and_wilson_interval() -> None:
    top1, top5 = METRICS.get("top1"), METRICS.get("top5")
    records = [
        (3, [3, 1, 2, 0, 4]),
        (3, [1, 3, 2, 0, 4]),
        (7, [1, 2, 3, 4, 5]),
        (5, [0, 1, 2, 3, 5]),
    ]
    stored = [{"y": y, "topk": k} for y, k in records]  # the image task's records
    assert [top1.per_sample(r) for r in stored] == [True, False, False, False]
    assert [top5.per_sample(r) for r in stored] == [True, True, False, True]
    values = [top5.per_sample(r) for r in stored]
    value, (low, high) = top5.summarize(values)
    assert value == 0.75
    # Wilson score interval of 3/4 at z = 1.96, by hand.
    z = 1.959963984540054
    centre = (0.75 + z * z / 8) / (1 + z * z / 4)
    half = z * math.sqrt(0.75 * 0.25 / 4 + z * z / 64) / (1 + z * z / 4)
    assert (low, high) == pytest.approx((centre - half, centre + half))
    assert (low, high) == wilson_interval(3, 4)
    assert low == pytest.approx(0.3006, abs=1e-4) and high == pytest.approx(0.9544, abs=1e-4)
    assert top1.summarize([]) == (0.0, (0.0, 1.0))  # no samples: value 0, interval (0, 1)


def test_a_registered_real_metric_uses_its_own_aggregate_and_interval() -> None:
    margin = Metric(
        name="margin",
        description="test metric",
        higher_is_better=False,
        per_sample=lambda r: float(r["topk"].index(r["y"])) if r["y"] in r["topk"] else 5.0,
        display=MetricDisplay("margin"),
        paired_test="real",
        aggregate=max,
        interval=lambda values: (min(values), max(values)),
    )
    registry = extended_registry(margin)
    assert "margin" in registry.names() and "margin" not in METRICS
    assert set(registry.names()) - {"margin"} == set(METRICS.names())
    stored = [{"y": 1, "topk": [0, 1]}, {"y": 2, "topk": [0, 1]}]
    values = [registry.get("margin").per_sample(r) for r in stored]
    assert values == [1.0, 5.0]
    assert registry.get("margin").summarize(values) == (5.0, (1.0, 5.0))


def test_unknown_metrics_show_raw() -> None:
    assert find_metric("ppl") is None and find_metric("mce") is None
    assert metric_display("ppl") == MetricDisplay("ppl", 1.0, "", "")
    assert display_amount(metric_display("ppl"), 1.4149) == "1.41"
    assert display_amount(metric_display("top1"), 0.03) == "3.00 pp"


def test_report_values_read_per_sample_results() -> None:
    report = make_report("m", {"clean": 0.5}, n=8)
    top1, top5 = METRICS.get("top1"), METRICS.get("top5")
    assert list(top1.values_in(report, "clean")) == [True] * 4 + [False] * 4
    assert list(top5.values_in(report, "clean")) == [True] * 4 + [True, False, False, False]
    assert top1.values_in(report, "absent") is None


def _relabel(monkeypatch: pytest.MonkeyPatch, label: str, higher: bool = True) -> None:
    """Replace top1 in the registry by a copy with another label, raw scale and direction."""
    top1 = METRICS.get("top1")
    registry: Registry[Metric] = Registry("metric")
    changed = Metric(
        name="top1",
        description=top1.description,
        higher_is_better=higher,
        per_sample=top1.per_sample,
        display=MetricDisplay(label),
        paired_test=top1.paired_test,
        report_values=top1.report_values,
    )
    registry.register("top1")(changed)
    registry.register("top5")(METRICS.get("top5"))
    monkeypatch.setattr(metrics_module, "METRICS", registry)


def test_compare_and_tables_read_display_from_the_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reports = [
        ("a.json", make_report("a", {"clean": 0.75})),
        ("b.json", make_report("b", {"clean": 0.5})),
    ]
    before = COMPARE_FORMATS.get("markdown")(build_comparison(reports, metrics=["top1"]), False)
    assert before.splitlines()[0] == "| Model | clean top-1 (%) ↑ |"
    assert "| **75.00** |" in before
    assert "| Value (%) |" in markdown_fitting(reports[0][1])
    _relabel(monkeypatch, "accuracy")
    after = COMPARE_FORMATS.get("markdown")(build_comparison(reports, metrics=["top1"]), False)
    assert after.splitlines()[0] == "| Model | clean accuracy ↑ |"
    assert "| **0.75** |" in after  # raw scale now
    rows = report_rows(reports[0][1])
    assert rows[0][1:4] == ["top1", "↑", "0.75"] and rows[1][1:4] == ["top5 (%)", "↑", "81.20"]
    # top1 raw, top5 percent: units differ, so the header has none and rows name theirs
    table = markdown_fitting(reports[0][1])
    assert "| Value |" in table and "top5 (%)" in table


def test_compare_and_gate_read_direction_from_the_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base = make_report("base", {"clean": 0.8}, n=200)
    worse = flip(base, "clean", to_wrong=20)
    check = next(c for c in run_gate(base, worse).checks if c.name == "clean/top1")
    assert check.higher_is_better and check.drop == pytest.approx(0.10)
    _relabel(monkeypatch, "error", higher=False)  # pretend top1 were lower-is-better
    check = next(c for c in run_gate(base, worse).checks if c.name == "clean/top1")
    assert not check.higher_is_better and check.drop == pytest.approx(-0.10)
    cmp = build_comparison([("b", base), ("w", worse)], metrics=["top1"])
    assert cmp.columns[0].higher_is_better is False
    base_row, worse_row = cmp.rows
    assert cmp.cell(worse_row, cmp.columns[0]).mark == "best"
    assert report_rows(base)[0][2] == "↓"
    assert np.isclose(cmp.cell(base_row, cmp.columns[0]).value, 0.8)
