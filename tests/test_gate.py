"""`robench gate`: paired checks, classification, exit codes, summary, JUnit XML and the
files `--output NAME=PATH` writes."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from report_factory import flip, make_report, write
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench.cli import app
from robench.results.gate.policy import Policy, Rule, Tolerance, read_policy
from robench.results.gate.regression import Status, run_gate
from robench.results.report.schema import MetricValue, Report
from robench.results.stats import metrics as metrics_module

runner = CliRunner()


def _flat(text: str) -> str:
    """Rich wraps stderr at the console width; compare text with whitespace collapsed."""
    return " ".join(text.split())


def _invoke(tmp_path: Path, baseline: Report, candidate: Report, *extra: str):
    base = write(baseline, tmp_path / "base.json")
    cand = write(candidate, tmp_path / "cand.json")
    return runner.invoke(app, ["gate", "--baseline", str(base), "--candidate", str(cand), *extra])


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests must not append to the real step summary when they run in GitHub Actions."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture()
def baseline() -> Report:
    return make_report("deit_tiny", {"clean": 0.80, "fgsm": 0.50}, n=1000)


def test_identical_candidate_passes(tmp_path: Path, baseline: Report) -> None:
    result = _invoke(tmp_path, baseline, baseline.model_copy(deep=True))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("| Check | Baseline | Candidate |")
    for name in ("clean/top1", "clean/top5", "fgsm/top1", "fgsm/top5"):
        assert f"| {name} |" in result.stdout
    assert result.stdout.count("| pass |") == 4
    assert "gate pass: 0 regressed, 0 inconclusive, 4 passed" in _flat(result.stderr)


def test_thirty_of_a_thousand_flipped_regresses(tmp_path: Path, baseline: Report) -> None:
    candidate = flip(baseline, "clean", to_wrong=30)
    result = _invoke(tmp_path, baseline, candidate)
    assert result.exit_code == 1, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("| clean/top1 |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells == [
        "clean/top1",
        "80.00",
        "77.00",
        "-3.00 pp",
        "1.00 pp",
        "exact McNemar (b=30, c=0)",
        f"{0.5**30:.3g}",
        f"{4 * 0.5**30:.3g}",  # Holm across the 4 tested checks: the smallest p times 4
        "**regressed**",
    ]
    assert "regressed: clean/top1: drop of 3.00 pp exceeds 1.00 pp and is significant" in _flat(
        result.stderr
    )


def test_two_of_fifty_flipped_is_inconclusive(tmp_path: Path) -> None:
    baseline = make_report("deit_tiny", {"clean": 0.80, "fgsm": 0.50}, n=50)
    candidate = flip(baseline, "fgsm", to_wrong=2)  # 4 pp drop beyond the 2 pp tolerance
    relaxed = _invoke(tmp_path, baseline, candidate)
    assert relaxed.exit_code == 0, relaxed.output
    message = _flat(relaxed.stderr)
    assert "inconclusive: fgsm/top1: drop of 4.00 pp exceeds 2.00 pp but is not significant" in (
        message
    )
    # Holm over 4 checks: the only changed one's p = 0.25 becomes min(1, 4 x 0.25) = 1
    assert "(p = 0.25, Holm-adjusted 1 > alpha 0.05); about 153 samples would be needed" in (
        message
    )
    assert "inconclusive checks do not fail the gate without --strict" in message
    strict = _invoke(tmp_path, baseline, candidate, "--strict")
    assert strict.exit_code == 4, strict.output
    assert "about 153 samples would be needed" in _flat(strict.stderr)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"indices": range(1, 1001)}, "differ in sample set (indices_sha256)"),
        ({"suite_version": 2}, "differ in suite version (1 vs 2)"),
        (
            {"suite": "paper-corruptions"},
            "differ in suite (paper-adversarial vs paper-corruptions)",
        ),
        ({"accuracies": {"clean": 0.8}}, "lacks perturbation 'fgsm'"),
        ({"max_samples": {"fgsm": 500}}, "fgsm ran on 1000 samples in the baseline but 500"),
    ],
)
def test_unpairable_reports_exit_2(
    tmp_path: Path, baseline: Report, change: dict, message: str
) -> None:
    kwargs = {"accuracies": {"clean": 0.8, "fgsm": 0.5}, "n": 1000, **change}
    candidate = make_report("deit_tiny", **kwargs)
    result = _invoke(tmp_path, baseline, candidate)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    stderr = _flat(result.stderr)
    assert stderr.startswith("error: cannot gate:") and message in stderr
    assert "Traceback" not in result.output


def test_same_indices_different_labels_exit_2(tmp_path: Path, baseline: Report) -> None:
    candidate = baseline.model_copy(deep=True)
    targets = candidate.samples["default"].targets
    targets[0] = (targets[0] + 3) % 10
    result = _invoke(tmp_path, baseline, candidate)
    assert result.exit_code == 2
    assert "differ in sample targets" in _flat(result.stderr)


def test_summary_and_junit(
    tmp_path: Path, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    candidate = flip(baseline, "clean", to_wrong=30)
    step_summary = tmp_path / "step_summary.md"
    step_summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    summary, junit = tmp_path / "out" / "gate.md", tmp_path / "out" / "gate.xml"
    result = _invoke(
        tmp_path, baseline, candidate, "--summary", str(summary), "--junit", str(junit)
    )
    assert result.exit_code == 1

    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## robench gate: regressed\n")
    assert step_summary.read_text(encoding="utf-8") == "earlier step\n" + text + "\n"
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 4  # header, alignment, one row per check
    widths = {len(re.findall(r"(?<!\\)\|", line)) for line in table}
    assert widths == {10}  # 9 columns on every line: a well-formed table
    for name in ("clean/top1", "clean/top5", "fgsm/top1", "fgsm/top5"):
        assert sum(line.startswith(f"| {name} |") for line in table) == 1
    assert "- **regressed** `clean/top1`: drop of 3.00 pp exceeds 1.00 pp" in text
    assert "1 regressed, 0 inconclusive, 3 passed." in text
    assert "p-values adjusted by Holm-Bonferroni (family-wise error) across 4 tested" in text

    root = ET.parse(junit).getroot()
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["clean/top1", "clean/top5", "fgsm/top1", "fgsm/top5"]
    assert root.get("tests") == "4" and root.get("failures") == "1"
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("type") == "regression"
    assert "drop of 3.00 pp" in (failure.get("message") or "")
    assert all(c.find("failure") is None and c.find("skipped") is None for c in cases[1:])


def test_junit_marks_inconclusive_as_skipped_or_failure(tmp_path: Path) -> None:
    baseline = make_report("deit_tiny", {"clean": 0.80, "fgsm": 0.50}, n=50)
    candidate = flip(baseline, "fgsm", to_wrong=2)
    junit = tmp_path / "gate.xml"
    _invoke(tmp_path, baseline, candidate, "--junit", str(junit))
    case = ET.parse(junit).getroot().find("./testsuite/testcase[@name='fgsm/top1']")
    assert case is not None and case.find("skipped") is not None and case.find("failure") is None
    _invoke(tmp_path, baseline, candidate, "--junit", str(junit), "--strict")
    case = ET.parse(junit).getroot().find("./testsuite/testcase[@name='fgsm/top1']")
    failure = case.find("failure") if case is not None else None
    assert failure is not None and failure.get("type") == "inconclusive"


def test_output_writes_each_format_as_its_own_option_does(tmp_path: Path) -> None:
    """`--output NAME=PATH` is `--NAME PATH` for robench's formats, --strict included."""
    baseline = make_report("deit_tiny", {"clean": 0.80, "fgsm": 0.50}, n=50)
    candidate = flip(baseline, "fgsm", to_wrong=2)  # inconclusive: --strict changes the JUnit
    files = {"summary": "gate.md", "junit": "gate.xml", "json": "gate.json"}
    args: list[str] = []
    for name, file in files.items():
        args += [f"--{name}", str(tmp_path / file), "-o", f"{name}={tmp_path / 'out' / file}"]
    result = _invoke(tmp_path, baseline, candidate, *args, "--strict")
    assert result.exit_code == 4, result.output
    for file in files.values():
        written = (tmp_path / "out" / file).read_text(encoding="utf-8")
        assert written == (tmp_path / file).read_text(encoding="utf-8")
    assert 'type="inconclusive"' in (tmp_path / "out" / "gate.xml").read_text(encoding="utf-8")


def test_a_format_that_fails_leaves_no_file(tmp_path: Path, baseline: Report) -> None:
    """Every file is rendered before the first is written: a broken plugin format leaves
    neither its file nor the summary asked for before it."""
    from robench.results.gate.formats import GATE_FORMATS
    from robench.results.report.output_formats import register_format

    @register_format("gate", "broken", ".txt")
    def broken(result: object, strict: bool) -> str:
        raise RuntimeError("a plugin's bug")

    try:
        args = ["--summary", str(tmp_path / "gate.md"), "-o", f"broken={tmp_path / 'b.txt'}"]
        result = _invoke(tmp_path, baseline, baseline, *args)
    finally:
        GATE_FORMATS.unregister("broken")
    assert result.exit_code == 3, result.output
    assert "gate output format 'broken'" in result.stderr
    assert "raised RuntimeError: a plugin's bug" in result.stderr
    assert "unexpected" not in result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["base.json", "cand.json"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        # An earlier test's plugin may have registered a gate format in this process: the
        # list may hold more names than the built-in three.
        ("sumary=gate.md", "'sumary' is not one of 'json', 'junit', "),
        ("tsv=gate.tsv", "'tsv' is not one of 'json', 'junit', "),  # no --import
        ("gate.md", "'gate.md' is not NAME=PATH (a gate format and a file, e.g. summary="),
        ("=gate.md", "'=gate.md' is not NAME=PATH"),
        ("summary=", "'summary=' is not NAME=PATH"),
    ],
)
def test_a_bad_output_is_refused_before_the_gate_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, baseline: Report, value: str, message: str
) -> None:
    from hostile import refused

    monkeypatch.chdir(tmp_path)
    write(baseline, tmp_path / "base.json")
    write(flip(baseline, "clean", to_wrong=30), tmp_path / "cand.json")
    args = ["gate", "-b", "base.json", "-c", "cand.json", "--summary", "s.md", "--output", value]
    line = refused(args, tmp_path, "Invalid value for '--output' / '-o': " + message)
    assert line.endswith("see `robench gate --help`."), line


def test_policy_file(tmp_path: Path, baseline: Report) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        "alpha = 0.01\n"
        "[default]\nmax_abs_drop = 0.05\n"
        '[[rules]]\nperturbation = "fg*"\nmetric = "top1"\nmax_rel_drop = 0.10\n'
        '[[rules]]\nperturbation = "autoattack"\nignore = true\n',
        encoding="utf-8",
    )
    candidate = flip(baseline, "clean", to_wrong=30)  # 3 pp, within the 5 pp default
    candidate = flip(candidate, "fgsm", to_wrong=40)  # 4 pp = 8% of 50%, within 10% relative
    result = _invoke(tmp_path, baseline, candidate, "--policy", str(policy))
    assert result.exit_code == 0, result.output
    assert "| fgsm/top1 | 50.00 | 46.00 | -4.00 pp | 10% rel. |" not in result.stdout
    assert "| fgsm/top1 | 50.00 | 46.00 | -4.00 pp | 5.00 pp |" in result.stdout  # 10% of 50
    assert "policy rule 2 (perturbation 'autoattack', metric '*') matched no check" in _flat(
        result.stderr
    )
    tighter = flip(baseline, "fgsm", to_wrong=60)  # 6 pp = 12% of 50%
    result = _invoke(tmp_path, baseline, tighter, "--policy", str(policy))
    assert result.exit_code == 1
    assert "drop of 6.00 pp exceeds 10% rel. and is significant" in _flat(result.stderr)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("alpha = 2.0\n", "alpha: Input should be less than 1"),
        ('[[rules]]\nperturbation = "clean"\n', "set max_abs_drop, max_rel_drop, or ignore"),
        ("[default]\nmax_abs_dorp = 0.1\n", "default.max_abs_dorp: Extra inputs"),
        ("alpha = \n", "is not valid TOML"),
    ],
)
def test_invalid_policy_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(message)):
        read_policy(path)


def test_policy_in_percentage_points_is_refused(tmp_path: Path, baseline: Report) -> None:
    policy = Policy(default=Tolerance(max_abs_drop=2.0))
    with pytest.raises(ConfigError, match=r"write 0\.02 for 2 percentage points"):
        run_gate(baseline, baseline, policy)


def test_default_policy() -> None:
    policy = read_policy(None)
    assert policy.alpha == 0.05
    assert policy.tolerance_for("clean", "top1")[0].allowed_drop(0.8) == 0.01
    assert policy.tolerance_for("clean", "top5")[0].allowed_drop(0.8) == 0.02
    assert policy.tolerance_for("pgd", "top1") == (policy.default, None)
    both = Rule(max_abs_drop=0.01, max_rel_drop=0.02)
    assert both.allowed_drop(0.25) == pytest.approx(0.005)  # every limit that is set holds
    assert Rule(ignore=True).allowed_drop(0.5) is None


def test_improvement_passes(baseline: Report) -> None:
    candidate = flip(baseline, "fgsm", to_wrong=0, to_right=100)
    result = run_gate(baseline, candidate)
    check = next(c for c in result.checks if c.name == "fgsm/top1")
    assert check.status is Status.passed and check.detail == "improved by 10.00 pp."
    assert check.drop == pytest.approx(-0.10)
    assert result.status is Status.passed


def test_metric_without_per_sample_values(baseline: Report) -> None:
    base = make_report("lm", {"clean": 0.8}, extra_metrics={"wordswap": {"ppl": (52.59, False)}})
    worse = make_report("lm", {"clean": 0.8}, extra_metrics={"wordswap": {"ppl": (54.00, False)}})
    check = next(c for c in run_gate(base, worse).checks if c.metric == "ppl")
    assert check.drop == pytest.approx(1.41)  # lower is better: a rise is a drop
    assert check.status is Status.inconclusive and check.test is None
    assert "no per-sample ppl values" in check.detail
    better = make_report("lm", {"clean": 0.8}, extra_metrics={"wordswap": {"ppl": (50.0, False)}})
    assert next(c for c in run_gate(base, better).checks if c.metric == "ppl").status is (
        Status.passed
    )


def test_real_valued_metric_uses_the_paired_bootstrap(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    nll = rng.gamma(2.0, 1.0, 1000)
    per_sample = {"base": nll, "worse": nll + 0.2 + rng.normal(0, 0.3, 1000), "noisy": nll.copy()}
    per_sample["noisy"][:3] += 8.0  # mean +0.024 from three outliers: beyond tolerance, unsure
    nll_metric = metrics_module.Metric(
        name="window_nll",  # not the registered `nll`: its own tolerance
        description="negative log-likelihood",
        higher_is_better=False,
        per_sample=lambda record: 0.0,
        display=metrics_module.MetricDisplay("NLL"),
        paired_test="real",
        report_values=lambda r, p: per_sample[r.model.name],
    )
    monkeypatch.setattr(metrics_module, "METRICS", metrics_module.extended_registry(nll_metric))

    def report(name: str) -> Report:
        value = float(per_sample[name].mean())
        return make_report(
            name, {"clean": 0.8}, extra_metrics={"wiki": {"window_nll": (value, False)}}
        )

    policy = Policy(n_resamples=2000)
    worse = next(
        c
        for c in run_gate(report("base"), report("worse"), policy).checks
        if c.metric == "window_nll"
    )
    assert worse.test is not None and worse.test.name == "paired bootstrap (2000 resamples)"
    assert worse.status is Status.regressed and worse.test.p_value == pytest.approx(1 / 2001)
    noisy = next(
        c
        for c in run_gate(report("base"), report("noisy"), policy).checks
        if c.metric == "window_nll"
    )
    assert noisy.status is Status.inconclusive
    assert noisy.test is not None and noisy.test.samples_needed is not None
    assert noisy.test.samples_needed > 1000


# --- the paired bootstrap on real per-sample values read from the reports --------------------


def _normal_interval(values: Sequence[float]) -> tuple[float, float]:
    """Normal-approximation 95% interval of the mean of real values."""
    half = metrics_module.Z_95 * float(np.std(values, ddof=1)) / math.sqrt(len(values))
    return float(np.mean(values)) - half, float(np.mean(values)) + half


def _rank_loss(record: dict) -> float:
    """0 when top-1 is right, 0.5 when only the top 5 hold the label, 1 otherwise."""
    return 1.0 - 0.5 * float(record["top1"]) - 0.5 * float(record["top5"])


_REAL_METRICS = {
    higher: metrics_module.Metric(
        name="rank_score" if higher else "rank_loss",
        description="top-1/top-5 rank score" if higher else "top-1/top-5 rank loss",
        higher_is_better=higher,
        per_sample=(lambda r: 1.0 - _rank_loss(r)) if higher else _rank_loss,
        display=metrics_module.MetricDisplay("rank score" if higher else "rank loss"),
        paired_test="real",  # no report_values: the gate reads the report's stored column
        interval=_normal_interval,
    )
    for higher in (True, False)
}


def _with_real_metric(report: Report, metric: metrics_module.Metric) -> Report:
    """A copy of `report` that also stores `metric`: a per-sample column computed from the
    stored top-1 and top-5 columns, and its mean in the results, as `robench eval` would."""
    new = report.model_copy(deep=True)
    samples = next(iter(new.samples.values()))
    for result in new.results:
        columns = samples.values[result.name]
        records = [
            {"top1": a, "top5": b} for a, b in zip(columns["top1"], columns["top5"], strict=True)
        ]
        columns[metric.name] = [metric.per_sample(r) for r in records]
        value, ci95 = metric.summarize(columns[metric.name])
        result.metrics[metric.name] = MetricValue(
            value=value, ci95=ci95, higher_is_better=metric.higher_is_better
        )
    return new


@pytest.fixture(params=[False, True], ids=["lower is better", "higher is better"])
def real_metric(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    metric = _REAL_METRICS[request.param]
    monkeypatch.setattr(metrics_module, "METRICS", metrics_module.extended_registry(metric))
    return metric


def _real_check(result, perturbation: str, metric: metrics_module.Metric):
    return next(c for c in result.checks if c.name == f"{perturbation}/{metric.name}")


def test_bootstrap_flags_a_clearly_worse_real_metric(
    tmp_path: Path, baseline: Report, real_metric: metrics_module.Metric
) -> None:
    base = _with_real_metric(baseline, real_metric)
    # 100 of fgsm's 500 right samples become wrong but stay in the top 5: rank loss 0 -> 0.5.
    cand = _with_real_metric(flip(baseline, "fgsm", to_wrong=100), real_metric)
    sign = -1.0 if real_metric.higher_is_better else 1.0
    assert cand.results[1].metrics[real_metric.name].value == pytest.approx(
        base.results[1].metrics[real_metric.name].value + sign * 0.05
    )

    result = run_gate(base, cand)
    check = _real_check(result, "fgsm", real_metric)
    assert check.higher_is_better is real_metric.higher_is_better
    assert check.drop == pytest.approx(0.05)  # positive: worse in either direction
    assert check.test is not None
    assert check.test.name == "paired bootstrap (10000 resamples)"
    # Every paired difference points the worse way, so no resample re-centred on zero reaches
    # the observed mean: the smallest p-value a 10000-resample bootstrap can give.
    assert check.test.p_value == pytest.approx(1 / 10_001)
    assert check.status is Status.regressed
    assert check.detail == (
        "drop of 0.05 exceeds 0.02 and is significant (p = 0.0001, Holm-adjusted 0.0005 <= "
        "alpha 0.05)."  # Holm: the smallest of the gate's 5 p-values times 5
    )
    # Samples needed, from the normal approximation on the differences computed here.
    diffs = np.r_[np.full(100, 0.5), np.zeros(900)]
    z = NormalDist().inv_cdf(0.95) + NormalDist().inv_cdf(0.8)
    assert check.test.samples_needed == math.ceil((z * diffs.std(ddof=1) / diffs.mean()) ** 2)
    clean = _real_check(result, "clean", real_metric)
    assert clean.status is Status.passed and clean.detail == "no change."

    cli = _invoke(tmp_path, base, cand)
    assert cli.exit_code == 1, cli.output
    row = next(
        line for line in cli.stdout.splitlines() if line.startswith(f"| fgsm/{real_metric.name} |")
    )
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[5:] == [
        "paired bootstrap (10000 resamples)",
        "0.0001",
        "0.0005",
        "**regressed**",
    ]


def test_bootstrap_passes_an_equal_real_metric(
    baseline: Report, real_metric: metrics_module.Metric
) -> None:
    base = _with_real_metric(baseline, real_metric)
    result = run_gate(base, base.model_copy(deep=True))
    for perturbation in ("clean", "fgsm"):
        check = _real_check(result, perturbation, real_metric)
        assert check.test is not None and check.test.name.startswith("paired bootstrap")
        assert check.test.p_value == 1.0  # no difference at all
        assert check.drop == 0.0 and check.status is Status.passed
        assert check.detail == "no change."
    assert result.status is Status.passed


def test_bootstrap_respects_the_direction_of_an_improvement(
    baseline: Report, real_metric: metrics_module.Metric
) -> None:
    base = _with_real_metric(baseline, real_metric)
    # 100 wrong fgsm samples become right (and top 5): rank loss falls, rank score rises.
    cand = _with_real_metric(flip(baseline, "fgsm", to_wrong=0, to_right=100), real_metric)
    check = _real_check(run_gate(base, cand), "fgsm", real_metric)
    assert check.drop < -0.05  # an improvement in either direction
    assert check.status is Status.passed and check.detail.startswith("improved by")
    assert check.test is not None and check.test.p_value == 1.0  # one-sided: never "worse"
    # Read with the opposite direction, the same change is a significant regression.
    swapped = run_gate(cand, base)
    assert _real_check(swapped, "fgsm", real_metric).status is Status.regressed
