"""`robench sweep` through a real scheduler: a one-node SLURM cluster on localhost
(tests/slurm_cluster.py), the 2-model x 2-suite sweep submitted by submitit with `sbatch`,
one job cancelled mid-run with `scancel`, then the sweep run again. Every report equals a
plain `robench eval` of the same job.

Skipped, with the reason printed, where SLURM cannot start (no slurm-wlm or munge, not root,
a daemon that fails): `make slurm-test-deps` installs them on Debian.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import Cluster, ClusterUnavailable, start_cluster
from sweep_helpers import (
    assert_page_holds_every_job,
    assert_reports_equal_plain_evals,
    state_of,
    sweep_process,
    wait_for_batches,
    write_plan,
)

pytestmark = pytest.mark.slow

CANCELLED = "corruptions-smoke/vit_nano_elliptical_fmnist__seed0"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    pytest.importorskip("submitit", reason="submitit is not installed (pip install robench[slurm])")
    try:
        started = start_cluster(tmp_path_factory.mktemp("slurm"))
    except ClusterUnavailable as exc:
        print(f"SLURM test skipped: {exc}")
        pytest.skip(f"SLURM cannot start here: {exc}")
    try:
        yield started
    finally:
        started.stop()


def test_slurm_sweep_survives_scancel_and_matches_plain_evals(
    cluster: Cluster, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, "slurm", "[executors.slurm]\npoll_s = 0.5\n")
    sweep_dir = tmp_path / "sweep"
    first = sweep_process(plan, env=cluster.env)
    samples = sweep_dir / "reports" / f"{CANCELLED}.samples.jsonl"
    wait_for_batches(samples, 2, first, timeout_s=240)
    scheduler_id = state_of(sweep_dir, CANCELLED)["scheduler_id"]
    assert scheduler_id, state_of(sweep_dir, CANCELLED)
    env = {**os.environ, **cluster.env}
    subprocess.run(["scancel", scheduler_id], env=env, check=True)
    _, stderr = first.communicate(timeout=400)
    assert first.returncode == 3, stderr + cluster.log_tail()
    cancelled = state_of(sweep_dir, CANCELLED)
    print(f"the cancelled job's state: {cancelled['error']}")
    assert cancelled["status"] == "failed" and cancelled["executor"] == "slurm"
    assert f"failed {CANCELLED}" in stderr.replace("\n", " ")

    second = sweep_process(plan, env=cluster.env)
    _, stderr = second.communicate(timeout=400)
    assert second.returncode == 0, stderr + cluster.log_tail()
    state = state_of(sweep_dir, CANCELLED)
    assert state["status"] == "done" and state["resumed"], state
    assert "3 of 4 jobs are done: skipped" in stderr
    assert state["scheduler_id"] != scheduler_id  # a new SLURM job resumed it
    assert list((sweep_dir / "slurm").rglob("*_submission.sh"))  # submitit's sbatch scripts

    assert_reports_equal_plain_evals(sweep_dir, tmp_path / "plain")
    assert_page_holds_every_job(sweep_dir)


def test_a_cluster_that_cannot_start_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterUnavailable, match="not on PATH; install Debian's slurm-wlm"):
        start_cluster(tmp_path / "cluster")
