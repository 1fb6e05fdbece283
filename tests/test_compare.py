"""`robench compare`: paper-style tables, marks, references and notes on what was left out.

Golden files live in tests/golden/; after an intended change of the output, regenerate them
with `ROBENCH_UPDATE_GOLDEN=1 pytest tests/test_compare.py` and review the diff.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
from io import StringIO
from pathlib import Path

import pytest
from report_factory import make_report, write
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench.cli import app
from robench.cli.compare import parse_metrics
from robench.results.compare.comparison import build_comparison, metric_display
from robench.results.compare.formats import COMPARE_FORMATS
from robench.results.compare.tables import budget_label, report_rows
from robench.results.report.schema import Report
from robench.results.stats import metrics as metrics_module

GOLDEN = Path(__file__).parent / "golden"
runner = CliRunner()

# Table 2 of the paper (DeiT, DeiT-Elliptical) plus a third model; mCE is lower-is-better.
PAPER_ROWS = {
    "deit_tiny": ({"clean": 0.7223, "fgsm": 0.5261, "pgd": 0.4184}, 72.21),
    "deit_tiny_elliptical": ({"clean": 0.7236, "fgsm": 0.5464, "pgd": 0.4496}, 73.59),
    "deit_small": ({"clean": 0.7980, "fgsm": 0.5000, "pgd": 0.4496}, 70.10),
}


def _paper_report(name: str) -> Report:
    accuracies, mce = PAPER_ROWS[name]
    return make_report(
        name, accuracies, n=10_000, extra_metrics={"imagenet-c": {"mce": (mce, False)}}
    )


@pytest.fixture(autouse=True)
def _mce_metric(monkeypatch: pytest.MonkeyPatch) -> None:
    """mCE is not a registered metric yet; register one for these tests so the paper's
    tables show it as `mCE` (raw, lower is better), as a metric aggregated over results."""
    mce = metrics_module.Metric(
        name="mce",
        description="mean corruption error over the corruptions of a suite",
        higher_is_better=False,
        per_sample=lambda label, topk: label not in topk[:1],
        display=metrics_module.MetricDisplay("mCE"),
        paired_test="real",
    )
    monkeypatch.setattr(metrics_module, "METRICS", metrics_module.extended_registry(mce))


@pytest.fixture()
def three_reports(tmp_path: Path) -> list[Path]:
    return [write(_paper_report(name), tmp_path / f"{name}.json") for name in PAPER_ROWS]


def _flat(text: str) -> str:
    """Rich wraps stderr at the console width; compare text with whitespace collapsed."""
    return " ".join(text.split())


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ROBENCH_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"output differs from {path}"


@pytest.mark.parametrize(
    ("fmt", "golden"), [("markdown", "compare_three.md"), ("latex", "compare_three.tex")]
)
def test_golden_tables(three_reports: list[Path], fmt: str, golden: str) -> None:
    args = ["compare", *map(str, three_reports), "--format", fmt, "--metric", "top1,mce"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    _check_golden(golden, result.stdout)
    assert result.stderr == ""  # same suite, same samples: nothing to note


def test_markdown_marks_best_bold_and_second_underlined(three_reports: list[Path]) -> None:
    result = runner.invoke(app, ["compare", *map(str, three_reports), "-f", "markdown"])
    rows = {line.split(" | ")[0].strip("| "): line for line in result.stdout.splitlines()[2:]}
    # clean: 79.80 > 72.36 > 72.23
    assert "**79.80**" in rows["deit_small"]
    assert "<u>72.36</u>" in rows["deit_tiny_elliptical"]
    assert "| 72.23 |" in rows["deit_tiny"]
    # fgsm: 54.64 > 52.61 > 50.00
    assert "**54.64**" in rows["deit_tiny_elliptical"]
    assert "<u>52.61</u>" in rows["deit_tiny"]
    # pgd: a tie for best is bold twice; with two distinct values the worse is not underlined
    assert "**44.96**" in rows["deit_tiny_elliptical"] and "**44.96**" in rows["deit_small"]
    assert "| 41.84 |" in rows["deit_tiny"]
    # mCE is lower-is-better: 70.10 best, 72.21 second, 73.59 unmarked
    assert rows["deit_small"].endswith("**70.10** |")
    assert rows["deit_tiny"].endswith("<u>72.21</u> |")
    assert rows["deit_tiny_elliptical"].endswith("| 73.59 |")
    header = result.stdout.splitlines()[0]
    assert "clean top-1 (%) ↑" in header and "imagenet-c mCE ↓" in header
    assert "clean top-5 (%) ↑" in header  # all metrics without --metric


def test_reference_differences(three_reports: list[Path]) -> None:
    args = ["compare", *map(str, three_reports), "-f", "markdown", "-m", "top1,mce"]
    result = runner.invoke(app, [*args, "--reference", str(three_reports[0])])
    assert result.exit_code == 0, result.output
    rows = {line.split(" | ")[0].strip("| "): line for line in result.stdout.splitlines()[2:]}
    assert "deit_tiny (ref)" in rows
    assert "(+" not in rows["deit_tiny (ref)"] and "(-" not in rows["deit_tiny (ref)"]
    assert "**54.64** (+2.03)" in rows["deit_tiny_elliptical"]
    assert "**44.96** (+3.12)" in rows["deit_tiny_elliptical"]
    assert "<u>72.36</u> (+0.13)" in rows["deit_tiny_elliptical"]
    assert "50.00 (-2.61)" in rows["deit_small"]
    assert "**70.10** (-2.11)" in rows["deit_small"]  # mCE differences stay raw


def test_reference_outside_the_reports_becomes_the_first_row(
    three_reports: list[Path],
) -> None:
    args = ["compare", *map(str, three_reports[1:]), "-f", "csv", "-r", str(three_reports[0])]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    table = {row["model"]: row for row in csv.DictReader(StringIO(result.stdout))}
    assert list(table) == ["deit_tiny", "deit_tiny_elliptical", "deit_small"]
    assert float(table["deit_tiny_elliptical"]["fgsm/top1"]) == pytest.approx(54.64)
    assert float(table["deit_tiny_elliptical"]["fgsm/top1 diff"]) == pytest.approx(2.03)
    assert table["deit_tiny"]["fgsm/top1 diff"] == "0.0000"
    assert table["deit_small"]["imagenet-c/mce"] == "70.1000"
    assert table["deit_small"]["report"] == str(three_reports[2])


def test_confidence_intervals(three_reports: list[Path]) -> None:
    result = runner.invoke(app, ["compare", *map(str, three_reports), "-f", "json", "--ci"])
    payload = json.loads(result.stdout)
    cell = payload["rows"][1]["cells"]["fgsm/top1"]
    assert cell["value"] == pytest.approx(54.64)
    assert cell["mark"] == "best"
    low, high = cell["ci95"]
    assert low < 54.64 < high and high - low == pytest.approx(1.95, abs=0.05)  # Wilson, n=10^4
    markdown = runner.invoke(app, ["compare", *map(str, three_reports), "-f", "markdown", "--ci"])
    assert "**54.64** [53.66, 55.61]" in markdown.stdout


def test_columns_missing_in_some_reports_are_dropped_with_a_note(tmp_path: Path) -> None:
    full = write(
        make_report("deit_tiny", {"clean": 0.72, "fgsm": 0.52, "pgd": 0.41}), tmp_path / "a.json"
    )
    partial = write(make_report("elliptical", {"clean": 0.73, "fgsm": 0.55}), tmp_path / "b.json")
    result = runner.invoke(app, ["compare", str(full), str(partial), "-f", "markdown"])
    assert result.exit_code == 0, result.output
    assert "pgd" not in result.stdout
    assert "fgsm top-1" in result.stdout
    note = _flat(result.stderr)
    assert "note: dropped columns not present in every report:" in note
    assert "pgd/top1 (missing in elliptical)" in note and "pgd/top5 (missing in elliptical)" in note


def test_different_suites_and_sample_sets_are_flagged(tmp_path: Path) -> None:
    a = write(make_report("deit_tiny", {"clean": 0.7, "fgsm": 0.4}), tmp_path / "a.json")
    b = make_report(
        "elliptical",
        {"clean": 0.71, "fgsm": 0.45},
        suite="other-suite",
        suite_version=3,
        indices=range(1000, 2000),
        params={"clean": {"note": "x"}},
    )
    result = runner.invoke(
        app, ["compare", str(a), str(write(b, tmp_path / "b.json")), "-f", "csv"]
    )
    assert result.exit_code == 0, result.output
    note = _flat(result.stderr)
    assert "different suites (other-suite v3, paper-adversarial v1)" in note
    assert "different sample sets: deit_tiny (indices_sha256" in note
    assert "dropped columns measured with different parameters" in note  # clean params differ
    assert "fgsm/top1" in result.stdout and "clean/" not in result.stdout
    # Nothing is left to compare: the only shared perturbation differs in parameters.
    c = write(
        make_report("c", {"clean": 0.7}, params={"clean": {"note": "y"}}), tmp_path / "c.json"
    )
    failed = runner.invoke(app, ["compare", str(a), str(c)])
    assert failed.exit_code == 2
    assert "nothing to compare" in _flat(failed.stderr)


def _budget(norm: str | None, eps: float = 8 / 255) -> dict[str, object]:
    params: dict[str, object] = {"eps": eps, "eps_display": "8/255" if eps == 8 / 255 else "0.5"}
    return params | ({"norm": norm} if norm else {})


def test_results_under_different_norms_never_share_a_column() -> None:
    accuracies = {"clean": 0.7, "pgd": 0.4}
    linf = make_report("a", accuracies, params={"pgd": _budget("linf")})
    l2 = make_report("b", accuracies, params={"pgd": _budget("l2", eps=8 / 255)})
    cmp = build_comparison([("a.json", linf), ("b.json", l2)])
    assert {c.perturbation for c in cmp.columns} == {"clean"}
    assert "different parameters or directions across reports: pgd/top1, pgd/top5" in cmp.notes[-1]
    # A bounded result that names no norm is L-infinity (the attacks' default), in any case.
    for norm in (None, "Linf"):
        old = make_report("c", accuracies, params={"pgd": _budget(norm)})
        shared = build_comparison([("a.json", linf), ("c.json", old)], metrics=["top1"])
        assert [c.perturbation for c in shared.columns] == ["clean", "pgd"]
        apart = build_comparison([("b.json", l2), ("c.json", old)])
        assert {c.perturbation for c in apart.columns} == {"clean"}


def test_tables_show_the_norm_beside_eps() -> None:
    assert budget_label(_budget("linf")) == "Linf 8/255"
    assert budget_label(_budget("l2", eps=0.5)) == "L2 0.5"
    assert budget_label(_budget("Linf")) == "Linf 8/255"  # AutoAttack's spelling
    assert budget_label(_budget(None)) == "8/255" and budget_label({}) is None
    report = make_report("a", {"clean": 0.7, "pgd": 0.4}, params={"pgd": _budget("l2", 0.5)})
    assert [row[0] for row in report_rows(report)] == ["clean"] * 2 + ["pgd (eps L2 0.5)"] * 2


def test_rows_sharing_a_model_name_get_the_checkpoint_sha() -> None:
    first = make_report("deit_tiny", {"clean": 0.7}, checkpoint_sha256="a" * 64)
    second = make_report("deit_tiny", {"clean": 0.8}, checkpoint_sha256="b" * 64)
    comparison = build_comparison([("x.json", first), ("y.json", second)])
    assert comparison.rows == ["deit_tiny @aaaaaaaa", "deit_tiny @bbbbbbbb"]
    same = build_comparison([("x.json", first), ("x.json", first)])
    assert same.rows == ["deit_tiny @aaaaaaaa #1", "deit_tiny @aaaaaaaa #2"]


def test_unknown_metric_is_a_usage_error(three_reports: list[Path]) -> None:
    result = runner.invoke(app, ["compare", *map(str, three_reports), "--metric", "top"])
    assert result.exit_code == 2
    assert "Unknown metric 'top'. Did you mean" in _flat(result.stderr)
    assert "Available: mce, top1, top5." in _flat(result.stderr)
    empty = runner.invoke(app, ["compare", str(three_reports[0]), "--metric", ","])
    assert empty.exit_code == 2 and "names no metric" in _flat(empty.stderr)
    assert parse_metrics(" top1, top5 ") == ["top1", "top5"] and parse_metrics(None) is None
    with pytest.raises(ConfigError, match="names no metric"):
        parse_metrics(" , ")


def test_missing_report_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["compare", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert "does not exist" in _flat(result.stderr) and "Traceback" not in result.output


def test_rich_table_and_registry(three_reports: list[Path]) -> None:
    bad = runner.invoke(app, ["compare", *map(str, three_reports), "--format", "nope"])
    assert bad.exit_code == 2  # the choices are built from the registry
    assert all(repr(name) in bad.stderr for name in COMPARE_FORMATS.names()), bad.stderr
    result = runner.invoke(app, ["compare", *map(str, three_reports), "--format", "rich"])
    assert result.exit_code == 0
    assert "deit_tiny_elliptical" in result.stdout and "mCE ↓" in result.stdout
    assert "paper-adversarial v1" in result.stdout
    default = runner.invoke(app, ["compare", *map(str, three_reports)])
    # Markdown when stdout is not a terminal; this paper table is wider than a pipe's 120
    # columns, so it comes with models as columns (the full table: -o, csv, --format markdown).
    assert default.stdout.startswith("| Perturbation | Metric | deit_tiny |")
    assert max(len(line) for line in default.stdout.splitlines()) <= 120


def test_metric_display_rules() -> None:
    assert metric_display("top1").scale == 100.0 and metric_display("top1").unit == "%"
    assert metric_display("ppl").scale == 1.0 and metric_display("mce").label == "mCE"
    assert metric_display("loss").label == "loss" and metric_display("loss").scale == 1.0


def test_latex_escapes_labels() -> None:
    report = make_report("deit_tiny_50%", {"clean": 0.5})
    text = COMPARE_FORMATS.get("latex")(build_comparison([("r.json", report)]), False)
    assert isinstance(text, str)
    assert r"deit\_tiny\_50\% & 50.00 & " in text  # one row: nothing is marked


DEMO_REPORTS = Path(__file__).resolve().parents[1] / "reports" / "demo"


@pytest.mark.parametrize("extra", [[], ["--ci"], ["-m", "top1", "-r", "baseline"]])
def test_rich_at_80_columns_shows_every_number(extra: list[str]) -> None:
    reports = [str(DEMO_REPORTS / "baseline.json"), str(DEMO_REPORTS / "elliptical.json")]
    extra = [reports[0] if arg == "baseline" else arg for arg in extra]
    args = ["compare", *reports, *extra]
    result = runner.invoke(app, [*args, "-f", "rich"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    as_json = json.loads(runner.invoke(app, [*args, "-f", "json"]).stdout)
    for row in as_json["rows"]:
        for cell in row["cells"].values():
            assert f"{cell['value']:.2f}" in result.stdout
            if "--ci" in extra:
                assert "[{:.2f}, {:.2f}]".format(*cell["ci95"]) in result.stdout
            if "diff" in cell and row["model"] != as_json["reference"]:
                assert f"({round(cell['diff'], 2) + 0.0:+.2f})" in result.stdout
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_help_is_reflowed_by_the_terminal_and_promises_nothing_missing() -> None:
    result = runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    lines = [line.strip() for line in result.stdout.splitlines()]
    # every example on one line of its own
    assert "robench compare runs/*.json -r runs/deit.json --ci --format markdown" in lines
    assert "robench compare runs/deit.json runs/deit_elliptical.json" in lines
    # no sentence broken by a hard line break: a wrapped line leaves no room for the next word
    prose = result.stdout.split("╭")[0].split("Examples:")[0].splitlines()
    for line, following in itertools.pairwise(prose):
        if line.strip() and following.strip():
            room = 78 - len(line.rstrip())  # rich pads the help by one column each side
            assert len(following.split()[0]) + 1 > room, f"hard break after {line.strip()!r}"
    assert "perplexity" not in result.stdout.lower() and "mCE" not in result.stdout


def test_reports_scored_in_different_precisions_get_a_note() -> None:
    from robench.results.gate.regression import check_pairable
    from robench.results.report.schema import SpeedInfo

    base = _paper_report("deit_tiny")
    amp = _paper_report("deit_tiny").model_copy(
        update={
            "speed": SpeedInfo(amp="bf16", channels_last=False, compile=False, batch_size_used=64)
        }
    )
    same = build_comparison([("a.json", base), ("b.json", _paper_report("deit_tiny"))])
    assert not any("precisions" in note for note in same.notes)
    mixed = build_comparison([("a.json", base), ("b.json", amp)])
    assert any(
        "#1 fp32, deit_tiny @" in note and "#2 bf16 autocast" in note for note in mixed.notes
    )
    assert any("different precisions" in note for note in check_pairable(base, amp))


@pytest.mark.parametrize(
    ("name", "suffix"),
    [
        (n, s)
        for n in COMPARE_FORMATS.names()
        if n != "html"
        for s in COMPARE_FORMATS.get(n).suffixes
    ],
)
def test_output_suffix_picks_the_format_registered_with_it(
    three_reports: list[Path], tmp_path: Path, name: str, suffix: str
) -> None:
    paths = list(map(str, three_reports))
    shown = runner.invoke(app, ["compare", *paths, "--format", name])
    written = tmp_path / f"table{suffix.upper()}"  # any case
    result = runner.invoke(app, ["compare", *paths, "-o", str(written)])
    assert result.exit_code == 0, result.stderr
    assert written.read_text() == shown.stdout


def test_rich_output_to_a_file_names_the_file_formats(
    three_reports: list[Path], tmp_path: Path
) -> None:
    result = runner.invoke(
        app, ["compare", *map(str, three_reports), "-f", "rich", "-o", str(tmp_path / "t.txt")]
    )
    assert result.exit_code == 2
    assert "pass --format csv, html, json, latex or markdown" in _flat(result.stderr)
