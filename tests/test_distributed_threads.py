"""CPU threads under torchrun: each process takes its share of the node's cores unless the user
chose a thread count (robench/_core/distributed.py `cpu_threads`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from robench._core import distributed
from robench._core.distributed import cpu_threads

TORCHRUN = {"TORCHELASTIC_RUN_ID": "job", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2"}


def test_torchruns_one_thread_default_becomes_the_share_of_the_cores() -> None:
    env = {**TORCHRUN, "OMP_NUM_THREADS": "1"}  # set by torchrun: not in its own environment
    assert cpu_threads(env, launcher_environ={}, cores=8, current=1) == 4
    assert cpu_threads(env, launcher_environ={}, cores=2, current=1) == 1
    assert cpu_threads(env, launcher_environ={}, cores=1, current=1) == 1  # never 0


def test_a_thread_count_the_user_chose_is_kept() -> None:
    env = {**TORCHRUN, "OMP_NUM_THREADS": "1"}
    assert cpu_threads(env, {"OMP_NUM_THREADS": "1"}, cores=8, current=1) is None
    assert cpu_threads({**TORCHRUN, "OMP_NUM_THREADS": "3"}, {}, cores=8, current=3) is None
    assert cpu_threads({**TORCHRUN, "MKL_NUM_THREADS": "2"}, {}, cores=8, current=8) is None
    # torch.set_num_threads(3) by the caller after torchrun's default: kept
    assert cpu_threads(env, launcher_environ={}, cores=8, current=3) is None
    # the launcher's environment unreadable: OMP_NUM_THREADS may be the user's, so kept
    assert cpu_threads(env, launcher_environ=None, cores=8, current=1) is None


def test_without_any_thread_setting_each_process_takes_its_share() -> None:
    """A launcher that sets no OMP_NUM_THREADS (srun starting each rank): torch would take
    every core in every process."""
    srun = {"WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4"}
    assert cpu_threads(srun, launcher_environ={}, cores=16, current=16) == 4
    assert cpu_threads(srun, launcher_environ={}, cores=16, current=2) == 2  # never raised
    no_local = {"WORLD_SIZE": "2"}  # no LOCAL_WORLD_SIZE: all ranks counted as local
    assert cpu_threads(no_local, launcher_environ=None, cores=2, current=2) == 1


def test_a_user_choice_that_oversubscribes_the_node_is_kept_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for key, value in {**TORCHRUN, "OMP_NUM_THREADS": "2", "LOCAL_RANK": "0"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(distributed, "_cores", lambda: 2)
    monkeypatch.setattr(distributed, "_launcher_environ", lambda: {"OMP_NUM_THREADS": "2"})
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert distributed.share_cpu() == 2
    finally:
        torch.set_num_threads(before)
    assert "2 processes x 2 threads oversubscribe the 2 CPUs" in caplog.text
    assert "OMP_NUM_THREADS=1" in caplog.text


SCRIPT = """
import torch
from robench._core import distributed
distributed._cores = lambda: 8  # a node with 8 CPUs
threads = distributed.share_cpu()
print(f"rank {distributed.os.environ['RANK']} threads {threads} torch {torch.get_num_threads()}")
"""


def _torchrun(script: Path, env: dict[str, str]) -> list[str]:
    torchrun = Path(sys.executable).with_name("torchrun")
    done = subprocess.run(
        [str(torchrun), "--standalone", "--nproc_per_node=2", str(script)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The two ranks share one stdout: their lines can arrive run together, so read each
    # rank's line by its pattern rather than line by line.
    return sorted(re.findall(r"rank \d+ threads \d+ torch \d+", done.stdout))


@pytest.mark.slow
def test_under_torchrun_the_share_replaces_torchruns_default_but_not_the_users(
    tmp_path: Path,
) -> None:
    script = tmp_path / "threads.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    lines = _torchrun(script, env)
    assert lines == ["rank 0 threads 4 torch 4", "rank 1 threads 4 torch 4"]
    lines = _torchrun(script, {**env, "OMP_NUM_THREADS": "1"})
    assert lines == ["rank 0 threads 1 torch 1", "rank 1 threads 1 torch 1"]
