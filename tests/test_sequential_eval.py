"""Sequential evaluation end to end: `eval --target-halfwidth` stops early and records where,
and `gate --sequential` reaches the fixed-n gate's verdict on fewer samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robench.cli import app
from robench.evaluation.gate_run import Candidate, run_sequential_gate
from robench.evaluation.request import EvalRequest, evaluate
from robench.evaluation.sequential import check_every, chunk_ends, sequential_order
from robench.results.gate.checks import Status
from robench.results.gate.formats import summary_markdown
from robench.results.gate.policy import Policy
from robench.results.gate.regression import run_gate
from robench.results.report.schema import read_report

MODEL = "vit_nano_elliptical_fmnist"
CLEAN_FGSM = """name = "clean-fgsm"
version = 1

[[perturbations]]
kind = "clean"

[[perturbations]]
kind = "fgsm"
name = "fgsm"
eps = "8/255"
"""
CLEAN = 'name = "clean-only"\nversion = 1\n\n[[perturbations]]\nkind = "clean"\n'


def test_the_order_is_a_seeded_permutation_checked_in_whole_batches() -> None:
    chosen = list(range(0, 3000, 3))
    order = sequential_order(chosen, seed=0)
    assert sorted(order) == chosen and order != chosen
    assert order == sequential_order(chosen, seed=0) != sequential_order(chosen, seed=1)
    assert check_every(64) == 64 and check_every(48) == 96 and check_every(256) == 256
    assert chunk_ends(200, 48) == [96, 192, 200]
    assert chunk_ends(64, 64) == [64]


@pytest.mark.slow
def test_eval_target_halfwidth_stops_early_and_records_it(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    suite = tmp_path / "clean-fgsm.toml"
    suite.write_text(CLEAN_FGSM)
    out = tmp_path / "report.json"
    args = ["eval", MODEL, "-s", str(suite), "--limit", "2000", "--target-halfwidth", "0.1"]
    result = CliRunner().invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    report = json.loads(out.read_text())
    sequential = report["sequential"]
    n = sequential["n_stopped"]
    assert sequential["reached"] and n < 2000 and n % sequential["check_every"] == 0
    assert sequential["n_available"] == 2000 and sequential["target_halfwidth"] == 0.1
    assert sequential["metrics"] == ["top1", "top5"] and sequential["alpha"] == 0.05
    assert "Waudby-Smith" in sequential["method"]
    for found in report["results"]:
        assert found["n_samples"] == n
        low, high = found["metrics"]["top1"]["ci95"]
        assert (high - low) / 2 <= 0.1
    assert len(report["samples"]["default"]["indices"]) == n
    read_report(out)  # the schema accepts it
    # --resume reuses every stored batch (the chunks are whole batches) and ends the same.
    result = CliRunner().invoke(app, [*args, "-o", str(out), "--resume"])
    assert result.exit_code == 0, result.stderr
    again = json.loads(out.read_text())
    assert again["sequential"] == sequential and again["samples"] == report["samples"]
    assert [r["metrics"] for r in again["results"]] == [r["metrics"] for r in report["results"]]


def test_target_halfwidth_refuses_suites_without_bounded_metrics() -> None:
    model = "transformer_lm_nano_elliptical_pydocs"
    result = CliRunner().invoke(
        app, ["eval", model, "-s", "text-smoke", "--target-halfwidth", "0.1"]
    )
    assert result.exit_code == 2
    assert "not means of per-sample values in [0, 1]" in result.stderr
    result = CliRunner().invoke(app, ["eval", MODEL, "-s", "smoke", "--target-halfwidth", "0.7"])
    assert result.exit_code == 2 and "<= 0.5" in result.stderr


@pytest.mark.slow
def test_sequential_gate_reaches_the_fixed_n_verdict_on_fewer_samples(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    suite = tmp_path / "clean-only.toml"
    suite.write_text(CLEAN)

    def fixed_n(name: str) -> Path:
        out = tmp_path / f"{name}.json"
        request = EvalRequest(suite=str(suite), data=None, out=out, model=MODEL, limit=1000)
        evaluate(request)
        return out

    baseline = read_report(fixed_n("baseline"))
    fixed = run_gate(baseline, read_report(fixed_n("candidate")), Policy())
    assert fixed.status is Status.passed
    found = run_sequential_gate(baseline, Policy(), Candidate(MODEL, None, tmp_path / "seq.json"))
    assert found.status is fixed.status
    info = found.candidate.sequential
    assert info is not None and info.reached and info.stopping == "gate verdict"
    # Measured: 576 of 1000 samples (clean top1 within 1 pp and top5 within 2 pp, each at
    # alpha 0.025); benchmarks/bench_sequential_gate.py times the smoke suite.
    assert info.n_stopped < 1000
    assert all(check.n == info.n_stopped for check in found.checks)
    summary = summary_markdown(found)
    assert f"on the first {info.n_stopped} of 1000 samples in a seeded random order" in summary


BASELINE = Path(__file__).parents[1] / "reports" / "baselines" / f"{MODEL}-smoke.json"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "pass --candidate REPORT"),
        (["--sequential"], "pass --candidate-model MODEL"),
        (["-c", str(BASELINE), "--candidate-model", MODEL], "are for --sequential"),
    ],
)
def test_gate_refuses_a_missing_or_mixed_candidate(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["gate", "-b", str(BASELINE), *args])
    assert result.exit_code == 2
    assert message in result.stderr
