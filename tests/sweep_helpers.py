"""What the sweep tests share: a 2-model x 2-suite plan, killing one job mid-run, and the
comparison of a sweep's reports with plain `robench eval` runs of the same jobs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from robench.cli import app
from robench.results.stats.metrics import metric_display

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("vit_nano_fmnist", "vit_nano_elliptical_fmnist")
SUITES = ("smoke", "corruptions-smoke")
LIMIT = 16
BATCH = 4  # several batches per perturbation, so a job can be stopped between two


def write_plan(folder: Path, executor: str, extra: str = "") -> Path:
    """A plan of MODELS x SUITES, seed 0, small jobs, two at a time."""
    models = "".join(f'[[models]]\nmodel = "{name}"\n\n' for name in MODELS)
    plan = folder / "plan.toml"
    plan.write_text(
        f'executor = "{executor}"\n'
        'out_dir = "sweep"\n'
        f"suites = {json.dumps(list(SUITES))}\n"
        "seeds = [0]\n\n"
        f"{models}"
        f"[eval]\nlimit = {LIMIT}\nbatch_size = {BATCH}\n\n"
        "[resources]\ncpus = 1\n\n"
        f"{extra}"
    )
    return plan


def sweep_process(plan: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`robench sweep PLAN` as its own process, as a user runs it."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "robench", "sweep", str(plan), *args],
        cwd=plan.parent,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_batches(
    samples: Path, lines: int, process: subprocess.Popen, timeout_s: float
) -> None:
    """Until the per-sample file holds `lines` batches (its header not counted)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if samples.exists() and samples.read_bytes().count(b"\n") > lines:
            return
        if process.poll() is not None:
            raise AssertionError(f"the sweep ended first:\n{process.stderr.read()}")  # type: ignore[union-attr]
        time.sleep(0.1)
    raise AssertionError(f"{samples} did not reach {lines} batches in {timeout_s} s")


def state_of(sweep_dir: Path, job_id: str) -> dict[str, Any]:
    return json.loads((sweep_dir / "jobs" / f"{job_id}.json").read_text())


def kill_local_job(sweep_dir: Path, job_id: str) -> None:
    """SIGKILL the job's evaluation process, as an out-of-memory kill or a crash would."""
    pid = state_of(sweep_dir, job_id)["pid"]
    os.kill(pid, signal.SIGKILL)


def result_view(report: dict[str, Any]) -> dict[str, Any]:
    """What a report says about the model's robustness, without timing and environment:
    the results' metrics, the per-sample columns, aggregates and what was evaluated."""
    # A resumed job counts only the passes its own process ran (docs/formats.md, "Counted
    # cost"; none for a result finished before the kill), so the cost is left out here.
    results = [
        {k: v for k, v in r.items() if k not in ("wall_time_s", "cost")} for r in report["results"]
    ]
    datasets = {
        name: {k: d[k] for k in ("kind", "split", "n_total", "n_samples", "indices_sha256")}
        for name, d in report["datasets"].items()
    }
    return {
        "results": results,
        "samples": report["samples"],
        "aggregates": report.get("aggregates"),
        "datasets": datasets,
        "seed": report["seed"],
        "suite_sha256": report["suite"]["sha256"],
        "checkpoint_sha256": report["model"]["checkpoint_sha256"],
        "architecture": report["model"]["architecture"],
    }


def plain_eval(model: str, suite: str, out: Path) -> dict[str, Any]:
    """The same job as a plain `robench eval` (in this process, one thread like the job)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        args = ["eval", model, "--suite", suite, "--seed", "0", "--limit", str(LIMIT)]
        args += ["--batch-size", str(BATCH), "-o", str(out), "--format", "markdown"]
        result = CliRunner().invoke(app, args)
    finally:
        torch.set_num_threads(threads)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def assert_reports_equal_plain_evals(sweep_dir: Path, scratch: Path) -> None:
    for suite in SUITES:
        for model in MODELS:
            report = json.loads(
                (sweep_dir / "reports" / suite / f"{model}__seed0.json").read_text()
            )
            plain = plain_eval(model, suite, scratch / f"{suite}-{model}.json")
            assert result_view(report) == result_view(plain), f"{suite}/{model}"


def assert_page_holds_every_job(sweep_dir: Path) -> None:
    page = (sweep_dir / "leaderboard" / "index.html").read_text()
    for suite in SUITES:
        for model in MODELS:
            report = json.loads(
                (sweep_dir / "reports" / suite / f"{model}__seed0.json").read_text()
            )
            for result in report["results"]:
                for name, metric in result["metrics"].items():
                    # in display units: percent for accuracies and ECE, raw for NLL and Brier
                    shown = metric["value"] * metric_display(name).scale
                    assert f"{shown:.2f}" in page, (suite, model, result["name"], name)
            href = f"../reports/{suite}/{model}__seed0.json"
            assert href in page
