"""Aggregates over corruption results: mCE, relative mCE, extra mCE and mean corruption
accuracy/error by hand, their bootstrap intervals, the gate's paired checks of them and the
compare columns and per-corruption table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from report_factory import make_corruption_report, write
from typer.testing import CliRunner

from robench.cli import app
from robench.results.compare.comparison import build_comparison
from robench.results.gate.aggregates import paired_aggregate
from robench.results.gate.regression import Status, run_gate
from robench.results.report.schema import LabelSpaceInfo, Report, read_report
from robench.results.stats.aggregates import AGGREGATES, compute_aggregates, find_aggregate
from robench.results.stats.alexnet_reference import alexnet_reference

runner = CliRunner()

# AlexNet's mean error over severities (imagenet_c_alexnet_errors.csv), typed here by hand.
STANDARD = {
    "gaussian_noise": 0.886428,
    "shot_noise": 0.894468,
    "impulse_noise": 0.922640,
    "defocus_blur": 0.819880,
    "glass_blur": 0.826268,
    "motion_blur": 0.785948,
    "zoom_blur": 0.798360,
    "snow": 0.866816,
    "frost": 0.826572,
    "fog": 0.819324,
    "brightness": 0.564592,
    "contrast": 0.853204,
    "elastic_transform": 0.646056,
    "pixelate": 0.717840,
    "jpeg_compression": 0.606500,
}
EXTRA = {
    "speckle_noise": 0.845388,
    "gaussian_blur": 0.787108,
    "spatter": 0.717512,
    "saturate": 0.658248,
}
ALEXNET_CLEAN = 0.4345
ALL = ["mce", "relative_mce", "extra_mce", "mean_corruption_accuracy", "mean_corruption_error"]
RAMP = [0.1, 0.2, 0.3, 0.4, 0.5]  # a model's error at severities 1..5 (multiples of 1/20)


def _ramp_errors(corruptions, shift: float = 0.0) -> dict[tuple[str, int], float]:
    return {(c, s): RAMP[s - 1] + shift for c in corruptions for s in range(1, 6)}


def _aggregates(report: Report, **kwargs) -> dict[str, object]:
    report.aggregates = compute_aggregates(report, ALL, **kwargs)
    return {a.name: a for a in report.aggregates}


def test_the_shipped_reference_is_read_by_name() -> None:
    ref = alexnet_reference()
    assert ref.sets == {"standard": list(STANDARD), "extra": list(EXTRA)}
    assert ref.clean_error == ALEXNET_CLEAN
    for corruption, mean in {**STANDARD, **EXTRA}.items():
        assert ref.severities(corruption) == [1, 2, 3, 4, 5]
        assert np.mean([ref.errors[corruption, s] for s in range(1, 6)]) == pytest.approx(mean)
    assert ref.errors["snow", 3] == 0.86468 and ref.errors["saturate", 1] == 0.59342
    assert AGGREGATES.names() == sorted([*ALL, "mean_corruption_miou"])
    assert find_aggregate("nope") is None


def test_mce_relative_mce_and_extra_mce_by_hand() -> None:
    errors = _ramp_errors([*STANDARD, *EXTRA])
    found = _aggregates(make_corruption_report(errors=errors, n=20, clean_error=0.05))
    # CE_c = sum_s E(c, s) / sum_s E(AlexNet, c, s) = 1.5 / (5 * mean AlexNet error)
    ce = {c: 1.5 / (5 * a) for c, a in STANDARD.items()}
    assert found["mce"].value == pytest.approx(np.mean(list(ce.values())))
    assert found["mce"].details == pytest.approx(ce)
    assert found["mce"].members == [f"{c}-{s}" for c in STANDARD for s in range(1, 6)]
    relative = {c: (1.5 - 5 * 0.05) / (5 * a - 5 * ALEXNET_CLEAN) for c, a in STANDARD.items()}
    assert found["relative_mce"].value == pytest.approx(np.mean(list(relative.values())))
    assert found["relative_mce"].members[-1] == "jpeg_compression-5"
    extra = [1.5 / (5 * a) for a in EXTRA.values()]
    assert found["extra_mce"].value == pytest.approx(np.mean(extra))
    assert found["mean_corruption_accuracy"].value == pytest.approx(0.7)
    assert found["mean_corruption_error"].value == pytest.approx(0.3)
    assert found["mean_corruption_accuracy"].details["fog"] == pytest.approx(0.7)
    for aggregate in found.values():
        assert aggregate.reason is None
        low, high = aggregate.ci95
        assert low <= aggregate.value <= high
    assert not found["mce"].higher_is_better and found["mean_corruption_accuracy"].higher_is_better


def test_a_model_with_alexnet_errors_scores_100() -> None:
    n = 2000  # errors rounded to 1/n
    ref = alexnet_reference()
    report = make_corruption_report(errors=dict(ref.errors), n=n, clean_error=ALEXNET_CLEAN)
    found = _aggregates(report, n_boot=50)
    for name in ("mce", "relative_mce", "extra_mce"):
        assert found[name].value == pytest.approx(1.0, abs=2 / n)
        assert all(ce == pytest.approx(1.0, abs=4 / n) for ce in found[name].details.values())


def test_missing_corruptions_give_none_with_a_reason() -> None:
    errors = _ramp_errors(STANDARD)
    del errors["fog", 2], errors["snow", 5]
    found = _aggregates(make_corruption_report(errors=errors, n=20))
    assert found["mce"].value is None and found["mce"].ci95 is None
    assert found["mce"].reason == (
        "mce needs all 75 15 standard corruptions x severities results; 2 missing: snow-5, fog-2."
    )
    assert "speckle_noise-1" in (found["extra_mce"].reason or "")
    # the mean over the 73 results present: fog-2 (accuracy 0.8) and snow-5 (0.5) missing
    expected = (75 * 0.7 - 0.8 - 0.5) / 73
    assert found["mean_corruption_accuracy"].value == pytest.approx(expected)


def test_mce_is_imagenet_only_but_mean_accuracy_is_not() -> None:
    errors = _ramp_errors(STANDARD)
    found = _aggregates(make_corruption_report(errors=errors, n=20, classes=10))
    reason = found["mce"].reason or ""
    assert found["mce"].value is None and "defined for ImageNet-1k" in reason
    assert "has 10 classes" in reason and "see mean_corruption_error" in reason
    assert found["mean_corruption_accuracy"].value == pytest.approx(0.7)
    space = LabelSpaceInfo(
        name="imagenet-r", classes=200, sha256="0" * 64, source="shipped", protocol="cut"
    )
    restricted = make_corruption_report(errors=errors, n=20, label_space=space)
    assert "label space 'imagenet-r'" in (_aggregates(restricted)["mce"].reason or "")


def test_relative_mce_needs_a_clean_result() -> None:
    found = _aggregates(make_corruption_report(errors=_ramp_errors(STANDARD), n=20))
    assert found["relative_mce"].value is None
    assert "add a `clean` entry" in (found["relative_mce"].reason or "")
    assert found["mce"].value is not None


def test_interval_is_deterministic_contains_the_value_and_narrows() -> None:
    widths = []
    for n in (100, 2000):
        report = make_corruption_report(errors=_ramp_errors(STANDARD), n=n)
        first = compute_aggregates(report, ["mce"], seed=3)[0]
        assert compute_aggregates(report, ["mce"], seed=3)[0] == first
        assert first.ci95 is not None and first.value is not None
        assert first.ci95[0] < first.value < first.ci95[1]
        widths.append(first.ci95[1] - first.ci95[0])
    assert widths[1] < widths[0] / 3  # ~ 1/sqrt(20)


def test_members_with_fewer_samples_use_the_shared_prefix() -> None:
    errors = _ramp_errors(STANDARD)
    report = make_corruption_report(errors=errors, n=40, max_samples={("fog", 1): 20})
    found = _aggregates(report)
    assert "computed on the first 20 samples" in (found["mce"].reason or "")
    assert found["mce"].value is not None


def _candidate(flips: int) -> Report:
    """A model whose first `flips` correct samples of every standard result are wrong."""
    errors = _ramp_errors(STANDARD)
    wrong = {k: [*range(round(e * 400)), *range(200, 200 + flips)] for k, e in errors.items()}
    report = make_corruption_report(wrong=wrong, n=400)
    report.aggregates = compute_aggregates(report, ["mce", "mean_corruption_accuracy"])
    return report


def test_the_paired_bootstrap_is_paired() -> None:
    base, cand = _candidate(0), _candidate(4)
    stored = base.aggregates[0]
    paired = paired_aggregate(base, cand, stored)
    assert not isinstance(paired, str)
    assert paired.n == 400 and paired.baseline == pytest.approx(stored.value)
    expected = np.mean([(1.5 + 5 * 4 / 400) / (5 * a) for a in STANDARD.values()])
    assert paired.candidate == pytest.approx(expected)
    low, high = paired.ci95
    assert 0 < low <= paired.difference <= high
    assert stored.ci95 is not None
    assert high - low < (stored.ci95[1] - stored.ci95[0]) / 3  # far narrower than unpaired


def test_gate_checks_aggregates() -> None:
    base = _candidate(0)
    same = run_gate(base, base.model_copy(deep=True))
    check = next(c for c in same.checks if c.name == "mce")
    assert check.aggregate and check.status is Status.passed and check.detail == "no change."
    assert check.test is not None and "paired bootstrap over samples" in check.test.name
    worse = run_gate(base, _candidate(40))  # 10 pp more error on every standard result
    check = next(c for c in worse.checks if c.name == "mce")
    assert check.status is Status.regressed and check.drop > 0.1
    assert check.detail.startswith("drop of ") and "exceeds 2.00 and is significant" in check.detail
    accuracy = next(c for c in worse.checks if c.name == "mean_corruption_accuracy")
    assert accuracy.status is Status.regressed and "pp" in accuracy.detail


def test_gate_output_shows_aggregate_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base = write(_candidate(0), tmp_path / "base.json")
    cand = write(_candidate(40), tmp_path / "cand.json")
    junit = tmp_path / "gate.xml"
    result = runner.invoke(
        app,
        ["gate", "-b", str(base), "-c", str(cand), "--junit", str(junit)],
        env={"COLUMNS": "200"},  # wide enough for the full markdown table, tolerance column too
    )
    assert result.exit_code == 1, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("| mce |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[4] == "2.00" and cells[-1] == "**regressed**"
    assert 'name="mce"' in junit.read_text(encoding="utf-8")


def _model(name: str, shift: float, path: Path) -> Path:
    report = make_corruption_report(name, errors=_ramp_errors(STANDARD, shift), n=20)
    report.aggregates = compute_aggregates(report, ["mce", "mean_corruption_accuracy"])
    return write(report, path / f"{name}.json")


def test_compare_shows_aggregates_and_the_per_corruption_table(tmp_path: Path) -> None:
    paths = [_model(name, shift, tmp_path) for name, shift in (("a", 0.1), ("b", 0.0), ("c", 0.05))]
    result = runner.invoke(app, ["compare", *map(str, paths), "-f", "markdown", "-m", "mce"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "| Model | mCE ↓ |"
    rows = {line.split(" | ")[0].strip("| "): line for line in result.stdout.splitlines()[2:]}
    assert "**" in rows["b"] and "<u>" in rows["c"] and "**" not in rows["a"]  # lower is best
    cmp = build_comparison([(str(p), read_report(p)) for p in paths])
    assert [c.id for c in cmp.columns if c.aggregate] == ["mce", "mean_corruption_accuracy"]
    table = runner.invoke(app, ["compare", *map(str, paths), "--per-corruption", "-f", "csv"])
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0] == "corruption,a,b,c" and len(lines) == 1 + 15 + 1
    # The CSV keeps every float as computed (repr), so compare the numbers, not their text.
    for line, first in ((lines[1], "gaussian_noise"), (lines[-1], "mean")):
        name, *values = line.split(",")
        assert name == first  # mean of 1 - ramp (+ shift)
        assert [float(v) for v in values] == pytest.approx([60.0, 70.0, 65.0], abs=1e-9)
    for fmt in ("markdown", "latex", "json", "rich"):
        shown = runner.invoke(app, ["compare", *map(str, paths), "--per-corruption", "-f", fmt])
        assert shown.exit_code == 0 and "70.0" in shown.stdout, shown.output


def test_compare_drops_aggregates_on_different_protocols(tmp_path: Path) -> None:
    a = make_corruption_report("a", errors=_ramp_errors(STANDARD), n=20, clean_error=0.1)
    b = make_corruption_report(
        "b", errors=_ramp_errors(STANDARD), n=20, clean_error=0.1, source="rendered"
    )
    for report in (a, b):
        report.aggregates = compute_aggregates(report, ["mce"])
    cmp = build_comparison([("a.json", a), ("b.json", b)])
    assert not any(c.aggregate for c in cmp.columns)
    assert any("dropped aggregate mce, computed on different protocols" in n for n in cmp.notes)
    assert any("member parameters" in n for n in cmp.notes)
