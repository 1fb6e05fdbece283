"""The `local` executor (the default): a pool of N workers on this machine, each running one
job at a time as its own process on its own share of cores and GPUs (docs/sweeps.md, "`local`").
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from robench._core.errors import ConfigError
from robench.evaluation.store.lock import is_alive  # torch-free
from robench.evaluation.sweeps.executors import EXECUTORS, Executor
from robench.evaluation.sweeps.jobs import SweepJob
from robench.evaluation.sweeps.run_job import CPUS_VARIABLE, run_job
from robench.evaluation.sweeps.state import JobState, this_host

__all__ = ["LocalExecutor", "visible_gpus"]


class LocalOptions(BaseModel):
    """The plan's [executors.local] table."""

    model_config = ConfigDict(extra="forbid")

    workers: int | None = Field(default=None, ge=1)  # jobs at a time; default: as many as fit


def visible_gpus() -> list[str]:
    """The GPUs this process may use, without importing torch: CUDA_VISIBLE_DEVICES, else
    the ones `nvidia-smi -L` lists."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return [gpu.strip() for gpu in given.split(",") if gpu.strip() and gpu.strip() != "-1"]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        listed = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [str(i) for i, line in enumerate(listed.splitlines()) if line.startswith("GPU ")]


def _cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return None


@EXECUTORS.register("local")
class LocalExecutor(Executor):
    """A pool of worker processes on this machine (the default)."""

    Options = LocalOptions
    description = "a pool of N workers on this machine, splitting its CPUs and GPUs"

    def _fit(self) -> int:
        """How many jobs fit on the machine at once."""
        r = self.resources
        fit = max(1, len(_cores()) or os.cpu_count() or 1) // r.cpus
        if r.gpus:
            fit = min(fit, len(visible_gpus()) // r.gpus)
        return max(fit, 1)

    def _workers(self, jobs: int) -> int:
        wanted = self.options.workers  # type: ignore[attr-defined]
        return max(1, min(wanted or self._fit(), jobs))

    def check(self, jobs: list[SweepJob]) -> None:
        r, cores = self.resources, len(_cores()) or os.cpu_count() or 1
        gpus = visible_gpus() if r.gpus else []
        if r.cpus > cores:
            raise ConfigError(
                f"resources.cpus = {r.cpus} but this machine has {cores} cores; the local "
                "executor cannot give a job more, so lower cpus or use the slurm executor."
            )
        if r.gpus > len(gpus):
            raise ConfigError(
                f"resources.gpus = {r.gpus} but this machine has {len(gpus)} GPUs "
                "visible; lower gpus or use the slurm executor."
            )
        memory = _memory_gb()
        if r.mem_gb is not None and memory is not None and r.mem_gb > memory:
            raise ConfigError(
                f"resources.mem_gb = {r.mem_gb:g} but this machine has {memory:.0f} GB; lower "
                "mem_gb or use the slurm executor."
            )
        workers = self._workers(len(jobs))
        if r.gpus and workers * r.gpus > len(gpus):
            raise ConfigError(
                f"[executors.local] workers = {workers} with resources.gpus = {r.gpus} needs "
                f"{workers * r.gpus} GPUs but {len(gpus)} are visible; lower workers or gpus."
            )

    def _slots(self, workers: int) -> list[dict[str, str]]:
        """Each worker's share of the machine, as the environment of its jobs."""
        r = self.resources
        cores, gpus = _cores(), visible_gpus() if r.gpus else []
        per_worker = max(1, len(cores) // workers) if cores else r.cpus
        threads = max(1, min(r.cpus, per_worker) // r.processes)
        slots = []
        for k in range(workers):
            env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
            if cores and workers > 1:
                mine = cores[k * per_worker : (k + 1) * per_worker] or cores
                env[CPUS_VARIABLE] = ",".join(map(str, mine))
            env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus[k * r.gpus : (k + 1) * r.gpus])
            slots.append(env)
        return slots

    def run(self, jobs: list[SweepJob], *, wait: bool) -> None:
        if not jobs:
            return
        workers = self._workers(len(jobs))
        free: queue.Queue[dict[str, str]] = queue.Queue()
        for slot in self._slots(workers):
            free.put(slot)
        timeout = self.resources.time_min * 60.0 if self.resources.time_min else None

        def one(job: SweepJob) -> JobState:
            slot = free.get()
            try:
                return run_job(job, self.name, env=slot, timeout_s=timeout)
            finally:
                free.put(slot)

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sweep") as pool:
            for future in [pool.submit(one, job) for job in jobs]:
                future.result()

    def alive(self, state: JobState) -> bool | None:
        if state.host != this_host() or state.pid is None:
            return None
        return is_alive(state.pid)
