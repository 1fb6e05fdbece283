"""`robench sweep` with the local executor, end to end: a 2-model x 2-suite sweep in which one
job is killed mid-run; the sweep finishes the others, lists the failure, and a second run
resumes the killed job. Every report equals a plain `robench eval` of the same job, and the
leaderboard page holds every job's numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sweep_helpers import (
    assert_page_holds_every_job,
    assert_reports_equal_plain_evals,
    kill_local_job,
    state_of,
    sweep_process,
    wait_for_batches,
    write_plan,
)

pytestmark = pytest.mark.slow

KILLED = "smoke/vit_nano_fmnist__seed0"


def test_local_sweep_survives_a_killed_job_and_matches_plain_evals(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, "local", "[executors.local]\nworkers = 2\n")
    sweep_dir = tmp_path / "sweep"
    first = sweep_process(plan)
    samples = sweep_dir / "reports" / "smoke" / "vit_nano_fmnist__seed0.samples.jsonl"
    wait_for_batches(samples, 2, first, timeout_s=120)
    kill_local_job(sweep_dir, KILLED)
    _, stderr = first.communicate(timeout=300)
    assert first.returncode == 3, stderr  # one job failed, the others finished
    assert f"failed {KILLED}" in stderr.replace("\n", " ")
    assert state_of(sweep_dir, KILLED)["status"] == "failed"
    done = [
        p
        for p in (sweep_dir / "jobs").rglob("*.json")
        if json.loads(p.read_text())["status"] == "done"
    ]
    assert len(done) == 3

    second = sweep_process(plan, "--json")
    _, stderr = second.communicate(timeout=300)
    assert second.returncode == 0, stderr
    state = state_of(sweep_dir, KILLED)
    assert state["status"] == "done" and state["resumed"] and state["attempts"] == 2
    assert "3 of 4 jobs are done: skipped" in stderr

    assert_reports_equal_plain_evals(sweep_dir, tmp_path / "plain")
    assert_page_holds_every_job(sweep_dir)
    assert (sweep_dir / "leaderboard" / "smoke.md").exists()
    assert (sweep_dir / "leaderboard" / "corruptions-smoke.csv").exists()
