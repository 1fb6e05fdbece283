"""The counted cost in reports, `compare --cost`, `robench.compare` and `to_pandas()`; reports
written before robench counted passes (schema 4) load with the cost unknown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import robench
from robench.cli import app
from robench.results.report.schema import SCHEMA_VERSION, Report, ResultCost, read_report

DEMO = Path(__file__).resolve().parents[1] / "reports" / "demo"


def _costed(path: Path, tmp_path: Path) -> tuple[Path, dict[str, float]]:
    """The demo report with a counted cost per result (passes per sample 1, 2, 3...)."""
    report = read_report(path)
    results, per_sample = [], {}
    for i, result in enumerate(report.results, start=1):
        n = result.n_samples
        cost = ResultCost(
            forward=n * i,
            backward=0,
            scoring_forward=n,
            samples=n,
            forward_per_sample=float(i),
            backward_per_sample=0.0,
            passes_per_sample=float(i),
        )
        per_sample[result.name] = float(i)
        results.append(result.model_copy(update={"cost": cost}))
    target = tmp_path / "costed.json"
    report.model_copy(update={"results": results}).save(target)
    return target, per_sample


def _compare(*args: str | Path) -> str:
    result = CliRunner().invoke(app, ["compare", *map(str, args)])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_older_reports_load_with_the_cost_unknown() -> None:
    for path in [*DEMO.glob("*.json"), *(DEMO.parent / "baselines").glob("*.json")]:
        assert json.loads(path.read_text())["schema_version"] < SCHEMA_VERSION
        report = read_report(path)
        assert all(result.cost is None for result in report.results)
        frame = report.to_pandas()
        assert frame["passes_per_sample"].isna().all()
        assert (frame["wall_time_s"].dropna() >= 0).all()


def test_compare_cost_column_shows_counted_and_unknown(tmp_path: Path) -> None:
    costed, per_sample = _costed(DEMO / "baseline.json", tmp_path)
    old = DEMO / "elliptical.json"
    csv = _compare(costed, old, "--cost", "--metric", "top1", "--format", "csv").splitlines()
    header = csv[0].split(",")
    rows = {line.split(",")[0]: line.split(",") for line in csv[1:]}
    for name, value in per_sample.items():
        column = header.index(f"{name}/passes_per_sample")
        assert float(rows["vit_nano_fmnist"][column]) == value
        assert rows["vit_nano_elliptical_fmnist"][column] == ""  # not counted: empty
    markdown = _compare(costed, old, "--cost", "--metric", "top1", "--format", "markdown")
    assert "passes_per_sample ↓" in markdown and "unknown" in markdown
    plain = _compare(costed, old, "--metric", "top1", "--format", "csv")
    assert "passes_per_sample" not in plain  # only with --cost


def test_lower_cost_is_marked_best(tmp_path: Path) -> None:
    cheap, _ = _costed(DEMO / "baseline.json", tmp_path)
    report = read_report(cheap)
    doubled = [
        r.model_copy(
            update={
                "cost": r.cost.model_copy(
                    update={"passes_per_sample": 2 * r.cost.passes_per_sample}
                )
            }
        )
        for r in report.results
        if r.cost is not None
    ]
    dear = tmp_path / "dear.json"
    report.model_copy(update={"results": doubled}).save(dear)
    payload = json.loads(_compare(cheap, dear, "--cost", "--format", "json", "--metric", "top1"))
    first, second = payload["rows"]
    assert first["cells"]["clean/passes_per_sample"]["value"] == 1.0
    assert second["cells"]["clean/passes_per_sample"]["value"] == 2.0
    assert first["cells"]["clean/passes_per_sample"]["mark"] == "best"


def test_python_frames_carry_the_cost(tmp_path: Path) -> None:
    costed, per_sample = _costed(DEMO / "baseline.json", tmp_path)
    frame = robench.compare([costed, DEMO / "elliptical.json"], metric="top1", cost=True)
    for name, value in per_sample.items():
        column = frame[f"{name}/passes_per_sample"]
        assert column.iloc[0] == value and column.isna().iloc[1]
    tidy = read_report(costed).to_pandas()
    clean = tidy[(tidy.perturbation == "clean") & (tidy.metric == "top1")].iloc[0]
    assert clean.passes_per_sample == per_sample["clean"]
    assert clean.forward_passes == clean.n * per_sample["clean"]
    assert clean.backward_passes == 0


def test_report_records_counted_cost_of_a_run() -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 4)).eval()
    x, y = torch.rand(5, 1, 4, 4), torch.randint(0, 4, (5,))
    report = robench.evaluate(model, suite=[{"kind": "fgm", "eps": 0.5}], data=(x, y))
    assert isinstance(report, Report) and report.schema_version == SCHEMA_VERSION
    cost = report.results[0].cost
    assert cost is not None
    # FGM: a gradient at the clean image, then the runner's re-run to score.
    assert (cost.forward, cost.backward, cost.scoring_forward) == (10, 5, 5)
    assert cost.passes_per_sample == pytest.approx(3.0)
