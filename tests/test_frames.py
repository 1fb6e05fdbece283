"""Reports as pandas DataFrames: `Report.to_pandas`, `robench.reports_frame`,
`robench.samples_frame`, `robench.compare` and `robench.gate`, checked against the committed
reports and against what the command line prints for the same reports."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from report_factory import flip, make_corruption_report, make_report, write
from typer.testing import CliRunner

import robench
from robench._core.errors import InputError
from robench.cli import app
from robench.results.report.html_table import MAX_ROWS
from robench.results.report.schema import (
    SCHEMA_VERSION,
    MetricValue,
    PerturbationResult,
    Report,
    read_report,
)
from robench.results.report.tidy import LEADING, TRAILING
from robench.results.stats.aggregates import compute_aggregates
from robench.results.stats.metrics import wilson_interval

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "reports" / "demo"
BASELINE = ROOT / "reports" / "baselines" / "vit_nano_elliptical_fmnist-smoke.json"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """`robench gate` must not append to a real step summary when tests run in CI."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def _param_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c not in (*LEADING, *TRAILING)]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# --- Report.to_pandas -------------------------------------------------------------------


def test_to_pandas_has_a_row_per_result_and_metric_with_the_stored_numbers() -> None:
    report = read_report(DEMO / "elliptical.json")
    frame = report.to_pandas()
    assert list(frame.columns[: len(LEADING)]) == list(LEADING)
    assert list(frame.columns[-len(TRAILING) :]) == list(TRAILING)
    params = _param_columns(frame)
    assert {"eps", "norm", "steps", "step_size", "max_samples", "n_iter"} <= set(params)
    assert len(frame) == sum(len(r.metrics) for r in report.results)
    for row in frame.itertuples(index=False):
        stored = report.result(row.perturbation)
        assert stored is not None
        measured = stored.metrics[row.metric]
        assert (row.value, row.ci_low, row.ci_high) == (measured.value, *measured.ci95)
        assert row.ci_low <= row.value <= row.ci_high
        assert 0.0 <= row.value <= 1.0  # fractions, not percent
        assert row.n == stored.n_samples
        assert row.higher_is_better == measured.higher_is_better
        assert (row.model, row.task, row.kind) == (report.model.name, report.task, stored.kind)
        assert (row.suite, row.seed, row.dataset) == (report.suite.name, report.seed, "default")
        for key in params:  # a result's own parameters, missing where it has none
            cell = getattr(frame, key)[frame.perturbation == row.perturbation].iloc[0]
            expected = stored.params.get(key)  # absent or null: missing
            assert _missing(cell) if expected is None else cell == expected
    fgsm4 = frame[(frame.perturbation == "fgsm-4") & (frame.metric == "top1")].iloc[0]
    assert fgsm4.eps == pytest.approx(4 / 255) and fgsm4.norm == "linf"
    assert fgsm4.value == pytest.approx(0.688)
    pgd = frame[frame.perturbation == "pgd20-8"]
    assert set(pgd.n) == {250} and set(pgd.steps) == {20}
    # accuracy against eps for a plot: one line per attack kind
    curve = frame[(frame.kind == "fgsm") & (frame.metric == "top1")].sort_values("eps")
    assert list(curve.value) == sorted(curve.value, reverse=True)


def test_aggregates_are_rows_of_kind_aggregate() -> None:
    report = read_report(DEMO / "baseline-corruptions.json")
    frame = report.to_pandas()
    aggregates = frame[frame.kind == "aggregate"]
    assert list(aggregates.perturbation) == [a.name for a in report.aggregates]
    assert len(frame) == sum(len(r.metrics) for r in report.results) + len(report.aggregates)
    for row in aggregates.itertuples(index=False):
        stored = report.aggregate(row.perturbation)
        assert stored is not None and stored.ci95 is not None
        assert row.metric == stored.kind
        assert (row.value, row.ci_low, row.ci_high) == (stored.value, *stored.ci95)
        assert row.higher_is_better == stored.higher_is_better
        assert row.n == 250
        assert all(_missing(getattr(row, key)) for key in ("corruption", "severity"))
    error = aggregates[aggregates.metric == "mean_corruption_error"].iloc[0]
    accuracy = aggregates[aggregates.metric == "mean_corruption_accuracy"].iloc[0]
    assert not error.higher_is_better and accuracy.higher_is_better
    assert error.value == pytest.approx(1 - accuracy.value)
    corruptions = frame[(frame.kind == "corruption") & (frame.metric == "top1")]
    assert set(corruptions.severity) == {1, 3, 5}
    assert corruptions.value.mean() == pytest.approx(accuracy.value)


def test_an_aggregate_without_a_value_has_missing_numbers() -> None:
    errors = {("gaussian_noise", s): 0.2 * s for s in (1, 2, 3)}
    report = make_corruption_report(errors=errors, clean_error=0.1, n=50)
    report.aggregates = compute_aggregates(report, ["mce", "mean_corruption_accuracy"])
    assert [a.value is None for a in report.aggregates] == [True, False]  # mCE needs all 15
    frame = report.to_pandas()
    for aggregate in report.aggregates:
        row = frame[frame.perturbation == aggregate.name].iloc[0]
        if aggregate.value is None:
            assert _missing(row.value) and _missing(row.ci_low) and _missing(row.ci_high)
        else:
            assert row.value == aggregate.value == pytest.approx(1 - (0.2 + 0.4 + 0.6) / 3)
        assert row.n == 50 and row.kind == "aggregate"


def test_nested_parameters_are_flattened_and_clashing_keys_prefixed() -> None:
    text = read_report(DEMO / "elliptical-text.json").to_pandas()
    swap = text[text.perturbation == "word-swap-2.5"].iloc[0]
    assert swap["realised.realised_rate"] == pytest.approx(0.024399)
    assert swap.rate == 0.025 and swap.method == "replace"
    assert set(text.metric) == {"perplexity", "word_perplexity", "bits_per_byte"}
    assert not text.higher_is_better.any()  # perplexity: lower is better
    report = make_report(
        accuracies={"clean": 0.8, "odd": 0.5},
        n=20,
        params={"odd": {"n": 3, "kind": "x", "eps": 0.1, "list": [1, 2]}},
    )
    frame = report.to_pandas()
    odd = frame[frame.perturbation == "odd"].iloc[0]
    assert (odd["param.n"], odd["param.kind"], odd.eps) == (3, "x", 0.1)
    assert odd.n == 20 and odd.kind == "odd" and odd["list"] == (1, 2)


# --- reports_frame --------------------------------------------------------------------------


def test_reports_frame_stacks_paths_and_objects() -> None:
    paths = [DEMO / "baseline.json", DEMO / "elliptical.json"]
    in_memory = read_report(BASELINE)
    frame = robench.reports_frame([*map(str, paths), in_memory])
    assert frame.columns[0] == "report"
    assert list(frame.columns[1 : 1 + len(LEADING)]) == list(LEADING)
    assert list(frame.report.unique()) == [*map(str, paths), "<report 3>"]
    expected = [read_report(p).to_pandas() for p in paths] + [in_memory.to_pandas()]
    assert len(frame) == sum(len(f) for f in expected)
    assert set(frame.model) == {"vit_nano_fmnist", "vit_nano_elliptical_fmnist"}
    by_report = frame.groupby("report", sort=False).value.sum()
    assert list(by_report) == pytest.approx([f.value.sum() for f in expected])
    # the baseline's PGD has no `norm`: missing there, present in the demo's
    pgd5 = frame[frame.perturbation == "pgd-5"]
    assert pgd5.norm.isna().all() and set(pgd5.steps) == {5}


def test_reports_frame_not_strict_returns_the_unreadable_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    absent = tmp_path / "absent.json"
    good = DEMO / "elliptical.json"
    frame, errors = robench.reports_frame([good, broken, absent], strict=False)
    assert set(frame.report) == {str(good)}
    assert len(frame) == len(read_report(good).to_pandas())
    assert [path for path, _ in errors] == [str(broken), str(absent)]
    assert "not readable JSON" in errors[0][1] and "does not exist" in errors[1][1]
    with pytest.raises(InputError, match="does not exist"):
        robench.reports_frame([good, absent])
    empty, none = robench.reports_frame([], strict=False)
    assert empty.empty and none == [] and "value" in empty.columns


# --- samples_frame ------------------------------------------------------------------------


def test_samples_frame_matches_the_per_sample_columns() -> None:
    report = read_report(DEMO / "elliptical.json")
    frame = robench.samples_frame(report)
    assert list(frame.columns[:8]) == [
        "model",
        "dataset",
        "perturbation",
        "kind",
        "index",
        "target",
        "prediction",
        "correct",
    ]
    assert {"top5", "first_success"} <= set(frame.columns)
    samples = report.samples["default"]
    for result in report.results:
        rows = frame[frame.perturbation == result.name]
        assert len(rows) == result.n_samples
        assert list(rows["index"]) == samples.indices[: result.n_samples]
        assert list(rows.target) == samples.targets[: result.n_samples]
        assert list(rows.correct) == report.sample_values(result.name, "top1")
        # the stored top-1 is the mean of the per-sample correctness
        assert rows.correct.mean() == pytest.approx(result.metrics["top1"].value)
        assert (rows.correct == (rows.prediction == rows.target)).all()
    pgd = frame[frame.perturbation == "pgd20-8"]
    fooled_early = pgd.first_success.notna()
    assert not pgd.correct[fooled_early].any()  # fooled at some iterate: wrong at the end
    assert frame[frame.kind == "fgsm"].first_success.isna().all()  # FGSM records none


def test_samples_frame_keeps_text_attack_columns() -> None:
    path = DEMO / "elliptical-text-classification.json"
    frame = robench.samples_frame(str(path))
    report = read_report(path)
    attacked = frame[frame.perturbation == "pwws"]
    assert set(attacked.outcome) <= {"skipped", "succeeded", "failed"}
    assert list(attacked.queries) == report.sample_values("pwws", "queries")
    assert frame[frame.perturbation == "clean"].queries.isna().all()
    rate = report.result("pwws").metrics["attack_success_rate"].value  # type: ignore[union-attr]
    succeeded = (attacked.outcome == "succeeded").sum()
    assert rate == pytest.approx(succeeded / (attacked.outcome != "skipped").sum())


def _minimal_norm_report(norms: list[float | None]) -> Report:
    """A report with a clean result and a minimal-norm result (cap 4/255) of `norms`."""
    n = len(norms)
    report = make_report(accuracies={"clean": 1.0}, n=n)
    cap = 4 / 255
    robust = [v is None or v > cap for v in norms]
    first = [None if v is None or v > cap else 3 for v in norms]
    result = PerturbationResult(
        name="fmn",
        kind="minimal-norm",
        params={"eps": cap, "norm": "linf", "method": "fmn", "steps": 10},
        n_samples=n,
        metrics={
            "top1": MetricValue(
                value=sum(robust) / n, ci95=wilson_interval(sum(robust), n), higher_is_better=True
            )
        },
        wall_time_s=1.0,
    )
    values = dict(report.samples["default"].values)
    values["fmn"] = {"top1": robust, "min_norm": norms, "first_success": first}
    samples = report.samples["default"].model_copy(update={"values": values})
    return report.model_copy(
        update={"results": [*report.results, result], "samples": {"default": samples}}
    )


def test_samples_frame_has_minimal_norm_columns() -> None:
    norms = [0.0, 1 / 255, 2 / 255, 5 / 255, None]
    frame = robench.samples_frame(_minimal_norm_report(norms))
    fmn = frame[frame.perturbation == "fmn"]
    assert list(fmn.min_norm.iloc[:4]) == norms[:4] and _missing(fmn.min_norm.iloc[4])
    assert list(fmn.correct) == [False, False, False, True, True]
    assert frame[frame.perturbation == "clean"].min_norm.isna().all()
    assert list(fmn.first_success.iloc[:3]) == [3, 3, 3]


# --- compare: the frame behind `robench compare --format csv` ---------------------------


def _cli_csv(args: list[str]) -> pd.DataFrame:
    result = runner.invoke(app, ["compare", *args, "--format", "csv"])
    assert result.exit_code == 0, result.output
    return pd.read_csv(io.StringIO(result.stdout))


DEMO_PAIRS = {
    "classification": ("baseline.json", "elliptical.json"),
    "corruptions": ("baseline-corruptions.json", "elliptical-corruptions.json"),
    "text": ("baseline-text.json", "elliptical-text.json", "gpt2-bpe-text.json"),
    "segmentation": ("baseline-segmentation.json", "elliptical-segmentation.json"),
}


@pytest.mark.parametrize("pair", DEMO_PAIRS, ids=str)
@pytest.mark.parametrize(
    ("cli", "keywords"),
    [
        ([], {}),
        (["--ci", "--reference", "{0}"], {"ci": True, "reference": 0}),
        (["--reference", "{1}"], {"reference": "{1}"}),
    ],
    ids=["plain", "ci-reference", "reference-path"],
)
def test_compare_frame_equals_the_cli_csv(
    pair: str, cli: list[str], keywords: dict[str, Any]
) -> None:
    paths = [str(DEMO / name) for name in DEMO_PAIRS[pair]]
    args = [*paths, *(a.format(*paths) for a in cli)]
    keywords = {k: v.format(*paths) if isinstance(v, str) else v for k, v in keywords.items()}
    frame = robench.compare(paths, **keywords)
    expected = _cli_csv(args)
    assert list(frame.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(frame, expected, check_dtype=False, atol=1e-12, rtol=1e-12)
    assert frame.attrs["columns"][0]["id"] == frame.columns[2]


def test_compare_csv_writes_every_float_repr_exact() -> None:
    """Machines read the CSV: each number is the frame's float as `repr` writes it, so it
    reads back bit for bit (the CSV used to round to 4 decimals)."""
    paths = [str(DEMO / name) for name in DEMO_PAIRS["corruptions"]]
    frame = robench.compare(paths, ci=True, reference=0)
    result = runner.invoke(app, ["compare", *paths, "--ci", "-r", paths[0], "-f", "csv"])
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == list(frame.columns)
    cells = [
        (text, frame.iloc[i, j]) for i, row in enumerate(rows[1:]) for j, text in enumerate(row)
    ]
    numbers = [(text, value) for text, value in cells[2:] if isinstance(value, float)]
    assert numbers and all(text == repr(float(value)) for text, value in numbers if text)
    assert any(len(text.split(".")[-1]) > 4 for text, _ in numbers)  # more than 4 decimals
    per = robench.compare(paths, per_corruption=True)
    text = runner.invoke(app, ["compare", *paths, "--per-corruption", "-f", "csv"]).stdout
    read = pd.read_csv(io.StringIO(text), float_precision="round_trip")
    pd.testing.assert_frame_equal(per, read, check_dtype=False, atol=0, rtol=0)


def test_compare_frame_shows_all_its_columns() -> None:
    """In a notebook (`_repr_html_`) and printed, every column is shown: no `...` column and
    no `[2 rows x 47 columns]` summary."""
    paths = [str(DEMO / name) for name in DEMO_PAIRS["corruptions"]]
    frame = robench.compare(paths, ci=True)
    assert len(frame.columns) > 40  # more than pandas shows by default (20)
    with pd.option_context("display.width", 80):
        html, text = frame._repr_html_(), repr(frame)
    assert html is not None
    assert all(f"<th>{column}</th>" in html for column in frame.columns)
    assert all(column in text for column in frame.columns)
    assert "..." not in html and "..." not in text and "columns]" not in text
    assert all(len(line) <= 80 for line in text.splitlines())  # wrapped in blocks
    derived = frame[frame.columns[:30]]
    assert "..." not in derived._repr_html_()


def test_reports_frame_and_gate_json_keep_every_float_as_stored(tmp_path: Path) -> None:
    paths = [DEMO / "baseline-corruptions.json", DEMO / "elliptical-corruptions.json"]
    frame = robench.reports_frame(list(map(str, paths)))
    for path in paths:
        report = read_report(path)
        rows = frame[(frame.report == str(path)) & (frame.kind != "aggregate")]
        for row in rows.itertuples(index=False):
            stored = report.result(row.perturbation)
            assert stored is not None
            measured = stored.metrics[row.metric]
            assert (row.value, row.ci_low, row.ci_high) == (measured.value, *measured.ci95)
    _, _, summary = _cli_gate(tmp_path, paths[0], paths[1])
    base, cand = (read_report(p) for p in paths)
    for check in summary["checks"]:
        if check["aggregate"]:
            continue
        for report, key in ((base, "baseline"), (cand, "candidate")):
            stored = report.result(check["perturbation"])
            assert stored is not None
            assert check[key] == stored.metrics[check["metric"]].value  # bit for bit


def test_compare_metric_filter_and_notes_match_the_cli() -> None:
    paths = [str(DEMO / "baseline.json"), str(BASELINE)]
    frame = robench.compare(paths, metric="top1")
    expected = _cli_csv([*paths, "--metric", "top1"])
    pd.testing.assert_frame_equal(frame, expected, check_dtype=False, atol=1e-12, rtol=1e-12)
    assert list(frame.columns) == ["model", "report", "clean/top1"]  # other suites' dropped
    notes = runner.invoke(app, ["compare", *paths, "-m", "top1", "-f", "csv"]).stderr
    assert frame.attrs["notes"] and all(
        " ".join(note.split()[:6]) in " ".join(notes.split()) for note in frame.attrs["notes"]
    )
    assert robench.compare(paths, metric=["top1"]).equals(frame)


def test_compare_at_eps_and_per_corruption_match_the_cli(tmp_path: Path) -> None:
    report = _minimal_norm_report([0.0, 1 / 255, 2 / 255, 5 / 255, None])
    path = str(write(report, tmp_path / "fmn.json"))
    frame = robench.compare([path], at_eps="1/255,3/255", ci=True)
    expected = _cli_csv([path, "--at-eps", "1/255,3/255", "--ci"])
    pd.testing.assert_frame_equal(frame, expected, check_dtype=False, atol=1e-12, rtol=1e-12)
    assert frame["fmn@1/255/top1"].iloc[0] == pytest.approx(60.0)  # norms > 1/255: 3 of 5
    assert (
        robench.compare([report], at_eps=[1 / 255, 3 / 255], ci=True)
        .iloc[:, 2:]
        .equals(frame.iloc[:, 2:])
    )
    paths = [str(DEMO / n) for n in DEMO_PAIRS["corruptions"]]
    per = robench.compare(paths, per_corruption=True)
    cli = _cli_csv([*paths, "--per-corruption"])
    pd.testing.assert_frame_equal(per, cli, check_dtype=False, atol=1e-12, rtol=1e-12)
    assert per.corruption.iloc[-1] == "mean"


def test_compare_takes_report_objects_and_an_outside_reference() -> None:
    base, ellip = read_report(DEMO / "baseline.json"), read_report(DEMO / "elliptical.json")
    frame = robench.compare([ellip], reference=base)
    assert list(frame.report) == ["<report 2>", "<report 1>"]
    assert list(frame.model) == ["vit_nano_fmnist", "vit_nano_elliptical_fmnist"]
    assert frame["clean/top1 diff"].tolist() == pytest.approx([0.0, -0.6])
    assert frame.attrs["reference"] == "vit_nano_fmnist"
    with pytest.raises(InputError, match="not an index"):
        robench.compare([base, ellip], reference=2)


# --- gate: the verdict of `robench gate --json` -----------------------------------------


def _cli_gate(
    tmp_path: Path, baseline: Path, candidate: Path, *extra: str
) -> tuple[int, str, dict]:
    out = tmp_path / "gate.json"
    args = ["gate", "-b", str(baseline), "-c", str(candidate), "--json", str(out), *extra]
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1, 4), result.output
    text = out.read_text()
    return result.exit_code, text, json.loads(text)


def _assert_checks_equal(checks: pd.DataFrame, summary: dict) -> None:
    expected = pd.DataFrame([{k: v for k, v in c.items() if k != "shown"} for c in summary])
    assert list(checks.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(checks, expected, check_dtype=False)


def _gate_cases(tmp_path: Path) -> dict[str, tuple[Path, Path, list[str]]]:
    base = make_report("deit_tiny", {"clean": 0.80, "fgsm": 0.50}, n=1000)
    regressed = flip(base, "clean", to_wrong=30, model="deit_tiny_v2")
    small = make_report("deit_tiny", {"clean": 0.80, "fgsm": 0.50}, n=200)
    # fgsm drops 3 pp on 200 samples (b=8, c=2): beyond 2 pp, not significant
    unsure = flip(small, "fgsm", to_wrong=8, to_right=2, model="deit_tiny_v3")
    policy = tmp_path / "policy.toml"
    policy.write_text('alpha = 0.01\n[[rules]]\nperturbation = "fgsm"\nmax_abs_drop = 0.03\n')
    reports = {"base": base, "regressed": regressed, "small": small, "unsure": unsure}
    paths = {name: write(report, tmp_path / f"{name}.json") for name, report in reports.items()}
    return {
        "demo-pass": (DEMO / "baseline.json", DEMO / "elliptical.json", []),
        "committed-baseline": (BASELINE, BASELINE, []),
        "regressed": (paths["base"], paths["regressed"], []),
        "inconclusive-strict": (paths["small"], paths["unsure"], ["--strict"]),
        "policy": (paths["small"], paths["unsure"], ["--policy", str(policy)]),
    }


@pytest.mark.parametrize(
    "case", ["demo-pass", "committed-baseline", "regressed", "inconclusive-strict", "policy"]
)
def test_gate_equals_the_cli_json(tmp_path: Path, case: str) -> None:
    baseline, candidate, extra = _gate_cases(tmp_path)[case]
    code, text, summary = _cli_gate(tmp_path, baseline, candidate, *extra)
    policy = extra[extra.index("--policy") + 1] if "--policy" in extra else None
    outcome = robench.gate(baseline, candidate, policy, strict="--strict" in extra)
    assert outcome.verdict == summary["status"]
    assert outcome.exit_code == code == summary["exit_code"]
    assert outcome.passed == (code == 0)
    _assert_checks_equal(outcome.checks, summary["checks"])
    assert outcome.to_json() == text
    assert outcome.notes == summary["notes"]
    expected = {
        "demo-pass": "pass",
        "committed-baseline": "pass",
        "regressed": "regressed",
        "policy": "pass",
    }
    if case in expected:
        assert outcome.verdict == expected[case]
    if case == "inconclusive-strict":
        assert outcome.verdict == "inconclusive" and not outcome.passed and code == 4


def test_gate_takes_reports_and_a_policy_dict(tmp_path: Path) -> None:
    base = make_report("deit_tiny", {"clean": 0.80, "fgsm": 0.50}, n=1000)
    candidate = flip(base, "clean", to_wrong=30, model="deit_tiny_v2")
    outcome = robench.gate(base, candidate)
    assert not outcome.passed and outcome.verdict == "regressed"
    row = outcome.checks.set_index("name").loc["clean/top1"]
    assert row.status == "regressed" and row["drop"] == pytest.approx(0.03)
    assert row.test == "exact McNemar (b=30, c=0)" and row.p_value == pytest.approx(0.5**30)
    lenient = robench.gate(base, candidate, {"rules": [{"metric": "*", "max_abs_drop": 0.05}]})
    assert lenient.passed and lenient.verdict == "pass"
    with pytest.raises(InputError, match="gate policy is invalid at alpha"):
        robench.gate(base, candidate, {"alpha": 2})
    other = make_report("deit_tiny", {"clean": 0.80}, n=1000, suite="another")
    with pytest.raises(InputError, match="cannot gate"):
        robench.gate(base, other)


# --- save and the notebook view -----------------------------------------------------------


def test_save_writes_what_the_cli_wrote_and_refuses_to_overwrite(tmp_path: Path) -> None:
    committed = DEMO / "elliptical.json"  # written by `robench eval`
    report = read_report(committed)
    target = tmp_path / "runs" / "r.json"
    assert report.save(target) == target
    written = target.read_bytes()
    # The committed report is schema 4: it is written back as the current schema, each result
    # with its cost unknown (null), and otherwise unchanged.
    expected = json.loads(committed.read_text())
    expected["schema_version"] = SCHEMA_VERSION
    for result in expected["results"]:
        result["cost"] = None
    # The environment's precision (fp32, tf32, ...) is recorded since schema 5: unknown here.
    expected["environment"].setdefault("precision", None)
    assert json.loads(written) == expected
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.json"]  # no temporary file
    other = read_report(DEMO / "baseline.json")
    with pytest.raises(InputError, match="already exists; pass overwrite=True"):
        other.save(target)
    assert target.read_bytes() == written
    other.save(str(target), overwrite=True)
    assert read_report(target) == other
    with pytest.raises(InputError, match="is a directory"):
        other.save(tmp_path)


def test_repr_html_is_a_small_escaped_table() -> None:
    report = make_report("<script>alert(1)</script>&co", {"clean": 0.5, "a<b>": 0.25}, n=8)
    page = report._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;&amp;co" in page
    assert "<td>a&lt;b&gt;</td>" in page
    assert page.count("<tr>") == 1 + 4  # header, two results x two metrics
    assert "<td>0.2500</td>" in page  # stored fractions
    long = read_report(DEMO / "baseline-corruptions.json")
    rows = len(long.to_pandas())
    shown = long._repr_html_()
    assert shown.count("<tr>") == 1 + MAX_ROWS
    assert f"{rows - MAX_ROWS} more rows" in shown


# --- imports --------------------------------------------------------------------------------


def test_the_api_imports_pandas_only_when_called_and_never_torch() -> None:
    probe = (
        "import sys, robench\n"
        "fns = [robench.reports_frame, robench.samples_frame, robench.compare, robench.gate]\n"
        "before = [m for m in ('pandas', 'torch') if m in sys.modules]\n"
        f"robench.reports_frame([{str(DEMO / 'baseline.json')!r}])\n"
        f"robench.gate({str(BASELINE)!r}, {str(BASELINE)!r}).checks\n"
        "after = [m for m in ('pandas', 'torch') if m in sys.modules]\n"
        "print(before, after)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] ['pandas']"
