"""`robench eval --dry-run`: each result's estimated passes, tested against the counted passes
of the same run (estimate >= count; within 2x where the estimate is not a worst case), the
wall time from a throughput a real run saved, and what it refuses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

import robench
from robench.cli import app
from robench.evaluation.planning import throughput
from robench.evaluation.suites import suite_from_data

# Small budgets of each attack the issue names; the names are the result labels.
_SUITE = """
name = "dry-run-check"
version = 1
description = "the attacks --dry-run is checked against, at small budgets"

[[perturbations]]
kind = "clean"

[[perturbations]]
kind = "fgsm"
eps = "8/255"

[[perturbations]]
name = "pgd"
kind = "pgd"
eps = "8/255"
steps = 5

[[perturbations]]
name = "apgd-ce"
kind = "autoattack"
eps = "8/255"
attacks = ["apgd-ce"]
n_iter = 5

[[perturbations]]
name = "autoattack"
kind = "autoattack"
eps = "8/255"
n_iter = 3
n_queries = 10
n_target_classes = 2

[[perturbations]]
name = "malt"
kind = "malt"
eps = "8/255"
n_iter = 3
candidates = 3
n_target_classes = 2
"""
# Their estimate is at most 2x the count on any model: nothing in them stops early.
_FIXED_COST = ("clean", "fgsm", "pgd", "apgd-ce")
_ROW = re.compile(r"^\| (\S+) \| \S+ \| \S+ \| (\d+) \| (\d+) \| (\d+) \|$")


def _plan_rows(stdout: str) -> dict[str, tuple[int, int, int]]:
    """result -> (samples, passes per sample, passes) of the dry run's table."""
    rows = (_ROW.match(line) for line in stdout.splitlines())
    return {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in rows if m}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The dry run before any real run, the real run's report, the dry run after it."""
    folder = tmp_path_factory.mktemp("dry-run")
    suite = folder / "suite.toml"
    suite.write_text(_SUITE)
    cache = folder / "cache"
    args = ["eval", "vit_nano_fmnist", "-s", str(suite), "--limit", "8", "-b", "8"]
    env = {"ROBENCH_CACHE_DIR": str(cache)}
    before = CliRunner().invoke(app, [*args, "--dry-run", "-o", str(folder / "dry.json")], env=env)
    real = CliRunner().invoke(app, [*args, "-o", str(folder / "real.json")], env=env)
    assert real.exit_code == 0, real.output
    after = CliRunner().invoke(app, [*args, "--dry-run"], env=env)
    report = json.loads((folder / "real.json").read_text())
    return {"before": before, "after": after, "report": report, "folder": folder, "cache": cache}


def test_the_dry_run_prints_a_plan_and_runs_nothing(runs: dict) -> None:
    before = runs["before"]
    assert before.exit_code == 0, before.output
    rows = _plan_rows(before.stdout)
    assert list(rows) == ["clean", "fgsm", "pgd", "apgd-ce", "autoattack", "malt"]
    assert all(samples == 8 and passes == 8 * per for samples, per, passes in rows.values())
    total = int(re.search(r"Total: (\d+) model passes", before.stdout)[1])  # type: ignore[index]
    assert total == sum(passes for _, _, passes in rows.values())
    assert rows["pgd"][1] == 1 + 3 * 5  # the re-run, then a gradient per step
    assert "no throughput measured for cpu" in before.stdout
    folder = runs["folder"]
    assert not (folder / "dry.json").exists()  # nothing written
    assert not list(folder.glob("dry*"))


def test_estimates_bound_the_counted_passes(runs: dict) -> None:
    """Every estimate is at least the counted forward + backward (and forward + 2 backward,
    its own unit); those of attacks that never stop early are within 2x of the count."""
    planned = _plan_rows(runs["before"].stdout)
    for result in runs["report"]["results"]:
        cost = result["cost"]
        estimate = planned[result["name"]][1]
        weighted = (cost["forward"] + 2 * cost["backward"]) / cost["samples"]
        assert estimate >= weighted >= cost["passes_per_sample"], result["name"]
        if result["name"] in _FIXED_COST:
            assert estimate <= 2 * cost["passes_per_sample"], result["name"]


def test_a_real_run_saves_its_throughput_and_the_dry_run_uses_it(runs: dict) -> None:
    report = runs["report"]
    saved = json.loads((runs["cache"] / "throughput.json").read_text())
    device = report["environment"]["device"]
    figure = saved[device]["vit_nano_fmnist"]  # figures by device, then by model
    costed = [r for r in report["results"] if r["cost"]]
    passes = sum(r["cost"]["forward"] + 2 * r["cost"]["backward"] for r in costed)
    seconds = sum(r["wall_time_s"] for r in costed)
    assert figure["passes"] == passes
    assert figure["passes_per_s"] == pytest.approx(passes / seconds)
    assert figure["model"] == "vit_nano_fmnist"
    after = runs["after"].stdout
    total = int(re.search(r"Total: (\d+) model passes", after)[1])  # type: ignore[index]
    shown = re.search(r"Wall time: about ([\d.]+) (s|min|h) at (\d+) passes/s", after)
    assert shown is not None, after
    scale = {"s": 1, "min": 60, "h": 3600}[shown[2]]
    expected = total / figure["passes_per_s"]
    assert float(shown[1]) * scale == pytest.approx(expected, rel=0.05, abs=0.1 * scale)


def _unbreakable() -> nn.Module:
    """Ten classes with wide margins: at eps 1/255 no attack breaks a sample, so attacks that
    stop on broken samples run in full (their estimate's worst case)."""
    torch.manual_seed(0)
    linear = nn.Linear(64, 10)
    with torch.no_grad():
        linear.weight.mul_(20)
    return nn.Sequential(nn.Flatten(), linear).eval()


@pytest.mark.parametrize(
    "entry",
    [
        {"kind": "autoattack", "eps": "1/255", "n_iter": 3, "n_queries": 10},
        {"kind": "malt", "eps": "1/255", "n_iter": 3},
    ],
    ids=["autoattack", "malt"],
)
def test_early_stopping_attacks_are_within_2x_when_every_sample_survives(entry: dict) -> None:
    model = _unbreakable()
    x = torch.rand(6, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        y = model(x).argmax(1)
    report = robench.evaluate(model, suite=[entry], data=(x, y), batch_size=3)
    (result,) = report.results
    assert result.metrics["top1"].value == 1.0  # nothing broke: the worst case
    assert result.cost is not None
    estimate = suite_from_data([entry], "image-classification").plan[0].params.passes_per_sample()
    assert result.cost.passes_per_sample <= estimate <= 2 * result.cost.passes_per_sample


def test_the_python_api_refuses_dry_run_with_one_sentence() -> None:
    model = _unbreakable()
    x, y = torch.rand(2, 1, 8, 8), torch.zeros(2, dtype=torch.long)
    with pytest.raises(robench.InputError, match=r"robench eval --dry-run.*plan_run"):
        robench.evaluate(  # type: ignore[call-arg]  # a keyword it refuses, on purpose
            model, suite=[{"kind": "clean"}], data=(x, y), dry_run=True
        )


def test_an_unreadable_or_foreign_throughput_file_counts_as_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(throughput.CACHE_ENV, str(tmp_path))
    assert throughput.saved_throughput("cpu") is None  # no file yet
    (tmp_path / throughput.FILE_NAME).write_text("{not json")
    assert throughput.saved_throughput("cpu") is None
    (tmp_path / throughput.FILE_NAME).write_text(json.dumps({"cpu": {"passes_per_s": 1}}))
    assert throughput.saved_throughput("cpu") is None  # another version's fields


def _figure(model: str, passes_per_s: float, created: str) -> dict[str, object]:
    return {
        "device": "cpu",
        "passes_per_s": passes_per_s,
        "passes": 100,
        "wall_time_s": 1.0,
        "model": model,
        "suite": "smoke",
        "created_utc": created,
    }


def test_a_model_s_own_figure_is_preferred_to_a_later_run_of_another_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Passes per second differ by orders of magnitude between models: the dry run of a
    model uses that model's figure on the device, else the latest other one (and says so)."""
    from robench.evaluation.planning.dry_run import PlannedCost, RunPlan
    from robench.evaluation.planning.plan_text import plan_text

    monkeypatch.setenv(throughput.CACHE_ENV, str(tmp_path))
    figures = {
        "big": _figure("big", 10.0, "2026-11-01T00:00:00+00:00"),
        "nano": _figure("nano", 10_000.0, "2026-11-02T00:00:00+00:00"),
    }
    (tmp_path / throughput.FILE_NAME).write_text(json.dumps({"cpu": figures}))
    assert throughput.saved_throughput("cpu", "big").passes_per_s == 10.0  # type: ignore[union-attr]
    other = throughput.saved_throughput("cpu", "huge")
    assert other is not None and other.model == "nano"  # the latest
    results = [PlannedCost("clean", "clean", "default", 10, 1)]
    plan = RunPlan("huge", "smoke", "cpu", 10, results, throughput=other)
    assert "another model's" in plan_text(plan) and "a short run of huge" in plan_text(plan)
    own = throughput.saved_throughput("cpu", "big")
    plan = RunPlan("big", "smoke", "cpu", 10, results, throughput=own)
    assert "another model's" not in plan_text(plan)
    # A file of the first format (one figure per device) still gives its figure.
    (tmp_path / throughput.FILE_NAME).write_text(json.dumps({"cpu": figures["nano"]}))
    assert throughput.saved_throughput("cpu", "big").model == "nano"  # type: ignore[union-attr]


def test_the_dry_run_flag_is_in_eval_help() -> None:
    result = CliRunner().invoke(app, ["eval", "--help"])
    assert result.exit_code == 0
    assert "--dry-run" in result.output
