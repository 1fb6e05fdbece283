"""`robench demo --quick` runs in the test suite and writes schema-valid reports and figures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from robench.cli import app
from robench.models.spec import bundled_cards
from robench.results.report.schema import report_json_schema


@pytest.fixture(autouse=True)
def _openmp_policy_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """`robench demo` sets OMP_WAIT_POLICY in its process (here, the test's) unless set: put
    back what was there after each test."""
    original = os.environ.get("OMP_WAIT_POLICY")
    monkeypatch.setenv("OMP_WAIT_POLICY", original or "unset")
    if original is None:
        monkeypatch.delenv("OMP_WAIT_POLICY")


pytestmark = pytest.mark.slow


SHIPPED = (
    "vit_nano_fmnist",
    "vit_nano_elliptical_fmnist",
    "transformer_lm_nano_pydocs",
    "transformer_lm_nano_elliptical_pydocs",
)


def test_shipped_model_cards_exist_and_are_small() -> None:
    cards = bundled_cards()
    assert set(SHIPPED) <= set(cards)
    for name in SHIPPED:
        weights = cards[name].with_suffix(".safetensors")
        assert weights.stat().st_size < 5_000_000


def test_quick_demo_writes_reports_comparison_and_figures(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    result = CliRunner().invoke(app, ["demo", "--quick", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    schema = report_json_schema()
    reports = {}
    for role in ("baseline", "elliptical"):
        report = json.loads((tmp_path / f"{role}.json").read_text())
        jsonschema.validate(report, schema)
        reports[role] = report
    assert reports["elliptical"]["model"]["extensions"]["elliptical"]["layers"] == 3
    assert reports["baseline"]["model"]["extensions"] == {}
    assert (
        reports["baseline"]["datasets"]["default"]["indices_sha256"]
        == reports["elliptical"]["datasets"]["default"]["indices_sha256"]
    )
    # The shipped models are trained: well above chance on clean data.
    for report in reports.values():
        clean = next(r for r in report["results"] if r["name"] == "clean")
        assert clean["metrics"]["top1"]["value"] > 0.7
    assert "vit_nano_fmnist" in result.stdout and "vit_nano_elliptical_fmnist" in result.stdout
    heatmap = tmp_path / "attention_heatmaps.png"
    assert heatmap.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "figures: " in result.stderr and "attention_heatmaps.png" in result.stderr
    # The language-model half: both shipped nano language models, clean and Word Swap.
    for role in ("baseline", "elliptical"):
        report = json.loads((tmp_path / f"{role}-text.json").read_text())
        jsonschema.validate(report, schema)
        results = {r["name"]: r["metrics"]["perplexity"]["value"] for r in report["results"]}
        # Trained well below the vocabulary's 8001-way uniform guess; swapping words hurts.
        assert results["clean"] < 300 < 8001
        assert results["word-swap-2.5"] > results["clean"]
        estimator = report["model"]["extensions"]["language_model"]["m_estimator"]
        assert estimator == ("prefix" if role == "elliptical" else None)
    assert "transformer_lm_nano_elliptical_pydocs" in result.stdout
    assert "gpt2_bpe_pydocs" in result.stdout  # the subword model beside them
    # Piped (CliRunner's streams are not terminals): tables fit 120 columns, the segmentation
    # section condensed (issue 39: 38 columns before), and progress is a few lines (about
    # 240 before: two per perturbation, and every log record wrapped at 80 columns).
    assert max(len(line) for line in result.stdout.splitlines()) <= 120
    assert "demo:fog-3" not in result.stdout and "mIoU (%) under corruptions" in result.stdout
    assert len(result.stderr.splitlines()) <= 60, result.stderr


def test_the_tour_is_the_default_and_says_what_is_left(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    """`robench demo`: attacks and corruptions on the nano ViT pair, the figures, the page and
    one table; every phase line says how many phases are left and about how long they take."""
    import re

    result = CliRunner().invoke(app, ["demo", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    written = sorted(p.name for p in tmp_path.glob("*.json"))
    assert written == [
        "baseline-corruptions.json",
        "baseline.json",
        "elliptical-corruptions.json",
        "elliptical.json",
    ]
    assert (tmp_path / "index.html").is_file() and (tmp_path / "accuracy_vs_eps.png").is_file()
    # One table: the attacks' comparison; the corruptions as one line per model.
    assert result.stdout.count("| Model") + result.stdout.count("| model") == 1, result.stdout
    assert result.stdout.count("mean corruption accuracy") == 2
    assert "robench demo --full" in result.stdout
    phases = re.findall(r"demo \[\s*[\d.]+s\] (.*)", result.stderr)
    assert phases[-1] == "done"
    for i, line in enumerate(phases[:-1], start=1):
        assert re.search(rf"\(phase {i} of 6; {7 - i} left, about [\d.]+ (s|min) ", line), line
    # The list of files is wrapped (piped: to 120 columns); log records stay one line each.
    listed = [line for line in result.stderr.splitlines() if line.startswith(" ")]
    assert listed and max(len(line) for line in listed) <= 120


def test_full_and_quick_together_are_refused() -> None:
    result = CliRunner().invoke(app, ["demo", "--full", "--quick"])
    assert result.exit_code == 2
    assert "pass one of them" in " ".join(result.stderr.split())


@pytest.mark.parametrize(("given", "kept"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_sleep_while_they_wait_unless_the_user_chose(
    monkeypatch: pytest.MonkeyPatch, given: str | None, kept: str
) -> None:
    """A spinning wait burnt a core per waiting thread on a shared machine (the tour at load 3:
    26-45 s of CPU time instead of 14); the demo asks for sleeping waits before torch loads."""
    from robench.cli.demo import _sleeping_openmp_waits

    if given is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)  # the fixture restores it
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", given)
    _sleeping_openmp_waits()
    assert os.environ["OMP_WAIT_POLICY"] == kept
