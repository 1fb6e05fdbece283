"""What robench reads from randomized-smoothing results: the metrics (certified accuracy at
each listed radius, ACR, abstention rate) with their intervals, the curve, `compare
--at-radius`, the html page's figure, and the check against empirical L2 attacks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from robench.cli import app
from robench.results.compare.html.figures import curve_figures
from robench.results.report.schema import MetricValue, PerturbationResult, Report
from robench.results.stats.certificate_checks import check_certificates
from robench.results.stats.certified_curves import certified_curve, certified_radii
from robench.results.stats.metrics import METRICS, find_metric, wilson_interval
from tests.report_factory import make_report

# (label, smoothed prediction or None, radius): six samples of labels 0..5.
SAMPLES: list[tuple[int, int | None, float]] = [
    (0, 0, 0.8),  # certified to 0.8
    (1, 1, 0.3),
    (2, 2, 0.1),
    (3, 4, 0.9),  # wrong: certified nowhere
    (4, None, 0.0),  # abstained
    (5, 5, 0.5),
]


def _records() -> list[dict[str, Any]]:
    return [
        {"y": y, "smoothed_prediction": p, "radius": r, "abstained": p is None}
        for y, p, r in SAMPLES
    ]


def _report(
    radii: tuple[float, ...] = (0.0, 0.25, 0.5),
    pgd_flips: list[bool] | None = None,
    smoothed: dict[str, tuple[dict[str, Any], list[int | None]]] | None = None,
) -> Report:
    """SAMPLES certified as `rs`, with a base-classifier PGD-L2 at 0.25 (`pgd_flips`) and
    smoothed-pgd results {name: (params, smoothed prediction at its image or None)}."""
    targets = [y for y, _, _ in SAMPLES]
    attacks: dict[str, tuple[str, dict[str, Any], dict[str, list[Any]]]] = {}
    if pgd_flips is not None:
        params = {"eps": 0.25, "norm": "l2", "steps": 10}
        attacks["pgd-l2"] = ("pgd", params, {"top1": [not f for f in pgd_flips]})
    for name, (params, predictions) in (smoothed or {}).items():
        columns = {
            "top1": [True] * 6,
            "smoothed_prediction": predictions,
            "abstained": [p is None for p in predictions],
        }
        attacks[name] = ("smoothed-pgd", {"norm": "l2", "alpha": 0.001, **params}, columns)
    return certified_report(
        targets,
        {
            "candidate": [p if p is not None else 0 for _, p, _ in SAMPLES],
            "count_selection": [90] * 6,
            "count_estimation": [900] * 6,
            "p_lower": [0.9] * 6,
            "radius": [r for _, _, r in SAMPLES],
            "abstained": [p is None for _, p, _ in SAMPLES],
            "smoothed_prediction": [p for _, p, _ in SAMPLES],
        },
        {"sigma": 0.25, "n0": 100, "n": 1000, "alpha": 0.001, "radii": list(radii)},
        attacks,
    )


def certified_report(
    targets: list[int],
    certificates: dict[str, list[Any]],
    params: dict[str, Any],
    attacks: dict[str, tuple[str, dict[str, Any], dict[str, list[Any]]]],
) -> Report:
    """A report of a clean result, a randomized-smoothing result `rs` with these certificate
    columns and parameters, and `attacks` {name: (kind, params, per-sample columns)}."""
    n = len(targets)
    base = make_report(accuracies={"clean": 1.0}, n=n)
    top1 = MetricValue(value=0.5, ci95=(0.2, 0.8), higher_is_better=True)
    results = [*base.results]
    values = {**base.samples["default"].values, "rs": certificates}
    for name, (kind, attack_params, columns) in {
        "rs": ("randomized-smoothing", params, {}),
        **attacks,
    }.items():
        metrics = {} if name == "rs" else {"top1": top1}
        results.append(
            PerturbationResult(
                name=name, kind=kind, params=attack_params, n_samples=n, metrics=metrics,
                wall_time_s=1.0,
            )
        )  # fmt: skip
        if name != "rs":
            values[name] = columns
    samples = base.samples["default"].model_copy(update={"targets": targets, "values": values})
    return base.model_copy(update={"results": results, "samples": {"default": samples}})


def test_certified_accuracy_is_one_metric_per_listed_radius() -> None:
    family = METRICS.get("certified_accuracy")
    members = family.expand({"radii": [0.0, 0.25, 0.5]})
    assert [m.name for m in members] == [
        "certified_accuracy@0",
        "certified_accuracy@0.25",
        "certified_accuracy@0.5",
    ]
    assert family.expand({"eps": 0.1}) == []  # a result without radii reports none
    records = _records()
    # right and radius > r: r = 0 -> samples 0, 1, 2, 5; 0.25 -> 0, 1, 5; 0.5 -> 0 only
    for member, expected in zip(members, [4, 3, 1], strict=True):
        value, ci95 = member.summarize(list(map(member.per_sample, records)))
        assert value == pytest.approx(expected / 6)
        assert ci95 == pytest.approx(wilson_interval(expected, 6))
    found = find_metric("certified_accuracy@0.25")
    assert found is not None and found.paired_test == "binary"
    assert found.display.label == "certified@0.25"
    assert find_metric("certified_accuracy@x") is None and find_metric("top1@0.5") is None


def test_acr_counts_wrong_and_abstained_as_zero_and_abstention_rate() -> None:
    acr, abstain = METRICS.get("acr"), METRICS.get("abstention_rate")
    records = _records()
    value, (low, high) = acr.summarize(list(map(acr.per_sample, records)))
    assert value == pytest.approx((0.8 + 0.3 + 0.1 + 0.5) / 6)
    assert 0 <= low <= value <= high
    rate, ci95 = abstain.summarize(list(map(abstain.per_sample, records)))
    assert rate == pytest.approx(1 / 6) and ci95 == pytest.approx(wilson_interval(1, 6))
    assert not abstain.higher_is_better


def test_curve_and_compare_at_radius(tmp_path: Path) -> None:
    report = _report()
    assert certified_radii(report, report.results[1]) == [0.8, 0.3, 0.1, 0.0, 0.0, 0.5]
    curve = certified_curve(report, report.results[1])
    assert curve is not None and curve.x[-1] >= 0.8
    at = dict(zip(curve.x, curve.value, strict=True))
    assert at[0.3] == pytest.approx(2 / 6) and at[0.8] == 0.0  # strictly greater
    path = tmp_path / "r.json"
    path.write_text(report.model_dump_json())
    runner = CliRunner()
    args = ["compare", str(path), "--at-radius", "0.2,0.6", "-f", "json"]
    shown = runner.invoke(app, [*args, "--metric", "certified_accuracy@0.2,certified_accuracy@0.6"])
    assert shown.exit_code == 0, shown.output
    assert "certified_accuracy@0.2" in shown.stdout and "certified_accuracy@0.6" in shown.stdout
    negative = runner.invoke(app, ["compare", str(path), "--at-radius", "0.2,-1"])
    assert negative.exit_code == 2 and "radii >= 0" in negative.output
    plain = make_report(n=6)
    other = tmp_path / "plain.json"
    other.write_text(plain.model_dump_json())
    none = runner.invoke(app, ["compare", str(other), "--at-radius", "0.5"])
    assert none.exit_code == 2 and "no report has one" in none.output
    titles = [f.title for f in curve_figures({"m": report})]
    assert "Certified accuracy against the L2 radius" in titles
    frame_columns = json.loads(shown.stdout)
    assert frame_columns  # the json table parses


def test_python_compare_takes_at_radius() -> None:
    import robench

    frame = robench.compare([_report()], at_radius=[0.2], metric="certified_accuracy@0.2")
    assert list(frame.columns)[-1] == "rs/certified_accuracy@0.2"
    assert frame.iloc[0, -1] == pytest.approx(100 * 3 / 6)


def test_base_classifier_attacks_are_not_held_to_the_certificate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """PGD-L2 on the base classifier flipping a sample certified beyond 0.25 is no
    contradiction (the certificate is about the smoothed classifier): no check, a log line."""
    with caplog.at_level("INFO", logger="robench.results.stats.certificate_checks"):
        checks = check_certificates(_report(pgd_flips=[True, True, False, False, False, True]))
    assert checks == []
    assert "base classifier" in caplog.text and "smoothed-pgd" in caplog.text


def test_check_warns_when_the_smoothed_classifier_is_flipped_within_the_radius() -> None:
    # Certified right beyond 0.25: samples 0, 1, 5. A sound certificate at alpha 0.001 (plus
    # PREDICT's 0.001) allows 0 of 3 to change class within 0.25.
    at = {"eps": 0.25, "sigma": 0.25}
    sound = [0, 1, 0, 0, None, 5]  # sample 2 (radius 0.1) and 3 (wrong) may change
    (check,) = check_certificates(_report(smoothed={"sadv": (at, sound)}))
    assert check.status == "pass" and check.values == {
        "radius": 0.25, "certified": 3, "broken": 0, "allowed": 0,
    }  # fmt: skip
    abstained = [None, None, 2, 3, None, 5]  # PREDICT abstaining is no flip
    (check,) = check_certificates(_report(smoothed={"sadv": (at, abstained)}))
    assert check.status == "pass"
    broken = [0, 2, 2, 3, None, 5]  # sample 1, certified to 0.3, flipped within 0.25
    (check,) = check_certificates(_report(smoothed={"sadv": (at, broken)}))
    assert check.status == "warn" and check.values["broken"] == 1
    assert "unsound" in check.detail and check.name == "certificate_vs_attack:rs:sadv@0.25"
    # Within 0.5 only sample 0 is certified: flipping sample 1 there says nothing.
    (check,) = check_certificates(_report(smoothed={"sadv": ({**at, "eps": 0.5}, broken)}))
    assert check.status == "pass" and check.values["certified"] == 1


def test_a_smoothed_attack_of_another_sigma_does_not_test_the_certificate() -> None:
    other = {"eps": 0.25, "sigma": 0.5}
    assert check_certificates(_report(smoothed={"sadv": (other, [1, 2, 3, 4, 5, 0])})) == []


def test_smoothed_accuracy_counts_abstentions_wrong() -> None:
    metric = METRICS.get("smoothed_accuracy")
    value, _ = metric.summarize(list(map(metric.per_sample, _records())))
    assert value == pytest.approx(4 / 6)  # samples 0, 1, 2, 5; 3 is wrong, 4 abstained
