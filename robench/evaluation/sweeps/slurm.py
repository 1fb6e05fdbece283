"""The `slurm` executor: the jobs go to SLURM through submitit, as one job array with the
plan's per-job resources; each task runs `run_job` in submitit's worker, so the sweep's folder
must be on a file system the nodes share (docs/sweeps.md, "`slurm`").
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from robench._core.errors import ConfigError
from robench._core.extras import require
from robench.evaluation.sweeps.executors import EXECUTORS, Executor
from robench.evaluation.sweeps.jobs import SweepJob
from robench.evaluation.sweeps.run_job import base_state, run_job
from robench.evaluation.sweeps.state import JobState, now_utc, read_state, write_state

__all__ = ["SlurmExecutor", "slurm_queue"]

logger = logging.getLogger(__name__)


class SlurmOptions(BaseModel):
    """The plan's [executors.slurm] table."""

    model_config = ConfigDict(extra="forbid")

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    array_parallelism: int = Field(default=256, ge=1)  # tasks of the array running at once
    setup: list[str] = Field(default_factory=list)  # shell lines before the job (module load)
    # Any other sbatch option, e.g. {"mail-type" = "END"}.
    additional: dict[str, str | int] = Field(default_factory=dict)
    poll_s: float = Field(default=5.0, gt=0)  # how often waiting asks squeue


def slurm_queue(ids: list[str]) -> dict[str, str] | None:
    """`{job id: state}` of the listed jobs still in SLURM's queue (array tasks as
    ARRAY_TASK); None when squeue cannot answer."""
    if not ids:
        return {}
    arrays = sorted({job_id.split("_")[0] for job_id in ids})
    try:
        run = subprocess.run(
            ["squeue", "-h", "-r", "-j", ",".join(arrays), "-o", "%i %T"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if run.returncode != 0:
        # squeue refuses ids it has forgotten (long finished): none of them is queued.
        return {} if "Invalid job id" in run.stderr else None
    rows = [line.split() for line in run.stdout.splitlines()]
    return {row[0]: row[1] for row in rows if len(row) == 2}


@EXECUTORS.register("slurm")
class SlurmExecutor(Executor):
    """One SLURM job array through submitit."""

    Options = SlurmOptions
    description = "one SLURM job array through submitit (sbatch), with the plan's resources"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._queues: dict[str, dict[str, str] | None] = {}  # array id -> squeue's answer

    def check(self, jobs: list[SweepJob]) -> None:
        require("submitit", 'the slurm executor (executor = "local" needs nothing)')
        if shutil.which("sbatch") is None:
            raise ConfigError(
                "the slurm executor submits with sbatch, which is not on PATH; run the sweep on "
                'a SLURM login node, or use executor = "local".'
            )
        r = self.resources
        if r.torchrun and r.gpus == 0 and r.cpus < 2:
            raise ConfigError(
                "resources.torchrun on CPUs starts one process per CPU, but cpus = 1; give "
                "cpus >= 2 or gpus, or drop torchrun."
            )

    def _parameters(self) -> dict[str, Any]:
        r, o = self.resources, self.options
        params: dict[str, Any] = {
            "job_name": f"robench-sweep-{self.folder.name}",
            "nodes": 1,
            "ntasks_per_node": 1,  # one run_job per task; torchrun starts the job's processes
            "cpus_per_task": r.cpus,
            "time": r.time_min,
            "array_parallelism": o.array_parallelism,  # type: ignore[attr-defined]
            "additional_parameters": dict(o.additional),  # type: ignore[attr-defined]
            "setup": list(o.setup),  # type: ignore[attr-defined]
        }
        if r.gpus:
            params["gpus_per_node"] = r.gpus
        if r.mem_gb is not None:
            params["mem"] = f"{max(1, round(r.mem_gb * 1024))}M"
        named = {name: getattr(o, name) for name in ("partition", "account", "qos", "constraint")}
        return params | {name: value for name, value in named.items() if value is not None}

    def run(self, jobs: list[SweepJob], *, wait: bool) -> None:
        if not jobs:
            return
        import submitit

        executor = submitit.SlurmExecutor(folder=self.folder / "slurm" / "%j")
        executor.update_parameters(**self._parameters())
        threads = {"OMP_NUM_THREADS": str(max(1, self.resources.cpus // self.resources.processes))}
        for job in jobs:  # pending before submission: a fast task may start at once
            state = read_state(job.state)
            if state is None or state.fingerprint != job.fingerprint:
                state = base_state(job, self.name)
            update = {"status": "pending", "executor": self.name, "scheduler_id": None}
            write_state(job.state, state.model_copy(update={**update, "submitted_utc": now_utc()}))
        with executor.batch():
            submitted = [executor.submit(run_job, job, self.name, env=threads) for job in jobs]
        for job, handle in zip(jobs, submitted, strict=True):
            state = read_state(job.state)  # a task that started has written its own id
            if state is not None and state.status == "pending" and state.scheduler_id is None:
                write_state(job.state, state.model_copy(update={"scheduler_id": handle.job_id}))
        logger.info("submitted %d jobs to SLURM as array %s", len(jobs), submitted[0].job_id)
        if wait:
            self._wait(jobs)
        self._queues.clear()  # what status read before the run is stale now

    def _wait(self, jobs: list[SweepJob]) -> None:
        poll = self.options.poll_s  # type: ignore[attr-defined]
        waiting = list(jobs)
        while waiting:
            time.sleep(poll)
            states = {job.job_id: read_state(job.state) for job in waiting}
            ids = [s.scheduler_id for s in states.values() if s is not None and s.scheduler_id]
            queued = slurm_queue(ids)
            still = []
            for job in waiting:
                state = states[job.job_id]
                if state is None or state.status in ("done", "failed"):
                    continue
                if queued is None or state.scheduler_id in queued:
                    still.append(job)
                    continue
                # Left the queue without a final state: re-read once (it may just have
                # written it), then it was cancelled or killed.
                again = read_state(job.state)
                if again is not None and again.status in ("done", "failed"):
                    continue
                _mark_lost(job, again or state)
            waiting = still

    def alive(self, state: JobState) -> bool | None:
        if not state.scheduler_id or shutil.which("squeue") is None:
            return None
        # One squeue for every job of the same array (status asks job by job).
        array = state.scheduler_id.split("_")[0]
        if array not in self._queues:
            self._queues[array] = slurm_queue([state.scheduler_id])
        queued = self._queues[array]
        return None if queued is None else state.scheduler_id in queued


def _mark_lost(job: SweepJob, state: JobState) -> None:
    where = "before it started" if state.status == "pending" else "while it ran"
    write_state(
        job.state,
        state.model_copy(
            update={
                "status": "failed",
                "error": f"SLURM job {state.scheduler_id} ended {where} without a report "
                "(cancelled or killed; see its log and SWEEP/slurm/)",
                "finished_utc": now_utc(),
            }
        ),
    )
