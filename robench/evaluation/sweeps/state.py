"""A job's state file: a small JSON file that the job itself writes, atomically, as it goes
(pending, running, done or failed with its last error line), so `robench sweep status` reads
the same files whichever executor ran the job and wherever it ran.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

__all__ = ["JobState", "read_state", "samples_files", "write_state"]

Status = Literal["pending", "running", "done", "failed"]


class JobState(BaseModel):
    """What a job's state file holds."""

    job_id: str
    fingerprint: str  # of the plan entry the job ran for (SweepJob.fingerprint)
    spec: dict[str, Any]  # that entry, to say what changed when it no longer matches
    status: Status
    error: str | None = None  # a failed job's last error line
    exit_code: int | None = None
    report: str
    log: str
    executor: str | None = None
    scheduler_id: str | None = None  # the scheduler's job id (SLURM: ARRAY_TASK), if any
    host: str | None = None  # where a running job runs
    pid: int | None = None  # its process id there
    resumed: bool = False  # continued an interrupted run with --resume
    submitted_utc: str | None = None
    started_utc: str | None = None
    finished_utc: str | None = None
    attempts: int = 0  # how many times the job started
    eval_s: float | None = None  # wall time of the last attempt's `robench eval` process
    job_s: float | None = None  # wall time of the last attempt, state files and log included


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def this_host() -> str:
    return socket.gethostname()


def read_state(path: Path) -> JobState | None:
    """The state file, or None when there is none (a torn or foreign file counts as none)."""
    try:
        return JobState.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def write_state(path: Path, state: JobState) -> None:
    """Replace the state file in one step: readers see the old or the new state, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(state.model_dump(mode="json"), fh, indent=1)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# The per-sample store's names (robench/evaluation/store/sample_store.py), read here without
# importing it: it imports torch, which a sweep's own processes never need.
def samples_files(report: Path) -> list[Path]:
    """The per-sample files an evaluation writing `report` leaves: REPORT.samples.jsonl, or
    one REPORT.samples.rankN.jsonl per torchrun rank."""
    stem = report.name.removesuffix(".json") + ".samples"
    found = [report.with_name(stem + ".jsonl")]
    found += sorted(report.parent.glob(stem + ".rank*.jsonl"))
    return [path for path in found if path.exists()]


def resumable(report: Path) -> bool:
    """An interrupted (or finished but unreported) evaluation left per-sample results."""
    return any(path.stat().st_size > 0 for path in samples_files(report))
