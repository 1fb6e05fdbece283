"""A sweep end to end: read the plan, decide what each job needs (skip, run, resume, refuse:
docs/sweeps.md, "Resume, skip, refuse"), hand the jobs to the executor. Every check runs
before anything is written, so a refused sweep leaves its folder as it was.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from robench._core.errors import ConfigError
from robench._core.overwrite_guard import nearest_existing
from robench.evaluation.sweeps.executors import Executor, build_executor, load_executors
from robench.evaluation.sweeps.jobs import SweepJob, plan_jobs
from robench.evaluation.sweeps.plan import SweepPlan, out_dir, read_plan
from robench.evaluation.sweeps.state import JobState, read_state, resumable, samples_files

__all__ = [
    "JobStatus",
    "LoadedSweep",
    "check_folder",
    "job_statuses",
    "load_sweep",
    "make_folder",
    "run_sweep",
]

logger = logging.getLogger(__name__)

Status = Literal["done", "running", "failed", "pending", "changed"]


@dataclass(frozen=True)
class LoadedSweep:
    """A plan read and checked: its jobs, folder and executor."""

    path: Path
    plan: SweepPlan
    folder: Path
    jobs: list[SweepJob]
    executor: Executor


@dataclass(frozen=True)
class JobStatus:
    """One row of `robench sweep status`."""

    job: SweepJob
    status: Status
    detail: str  # the error line, what changed, where it runs, or the report
    state: JobState | None
    active: bool = False  # known to be queued or running now: not started again


def load_sweep(path: Path, executor: str | None = None, *, check: bool = True) -> LoadedSweep:
    """Read and check the plan and its jobs, and with `check` whether the executor can run
    them (status and collect read files only: they need no sbatch); write nothing."""
    plan = read_plan(path)
    # A plugin file is relative to the plan, like every path in it; a module name is as is.
    here = path.resolve().parent
    load_executors([str(here / t) if t.endswith(".py") else t for t in plan.imports])
    name = executor or plan.executor
    folder = out_dir(plan, path)
    runner = build_executor(name, plan.resources, plan.executors.get(name, {}), folder)
    jobs = plan_jobs(plan, path)
    if check:
        check_folder(folder, path)
        runner.check(jobs)
    return LoadedSweep(path, plan, folder, jobs, runner)


def check_folder(folder: Path, plan: Path) -> None:
    """Refuse, before any job starts, a sweep folder that cannot be made or written: a file
    on its path, or a directory without write permission."""
    existing = nearest_existing(folder)
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        problem = "is not writable" if existing.is_dir() else "is a file"
        raise ConfigError(
            f"the sweep folder {folder} of {plan} cannot be written ({existing} {problem}); set "
            "the plan's out_dir to a folder you can write to."
        )


def make_folder(folder: Path) -> None:
    """The sweep folder; one sentence when the file system refuses it (a read-only mount,
    /proc, a full disk), before any job has started."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the sweep folder {folder} ({exc.strerror}); set the plan's "
            "out_dir to a folder you can write to."
        ) from None


def _changed(job: SweepJob, state: JobState) -> str:
    """What differs between the job's plan entry and the one its files were written for."""
    keys = sorted(
        key for key in set(job.spec) | set(state.spec) if job.spec.get(key) != state.spec.get(key)
    )
    return ", ".join(keys) or "the plan entry"


def _status(job: SweepJob, state: JobState | None, executor: Executor) -> JobStatus:
    if state is None:
        if job.report.exists() or samples_files(job.report):
            return JobStatus(job, "changed", "files not written by this sweep", None)
        return JobStatus(job, "pending", "", None)
    if state.fingerprint != job.fingerprint:
        return JobStatus(job, "changed", f"plan entry changed: {_changed(job, state)}", state)
    if state.status == "done" and job.report.exists():
        return JobStatus(job, "done", str(job.report), state)
    if state.status in ("pending", "running"):
        alive = executor.alive(state)
        if alive is False:
            gone = "interrupted: its process is gone" + (
                "; it resumes on the next run" if resumable(job.report) else ""
            )
            return JobStatus(job, "failed", gone, state)
        if state.status == "running":
            where = f"on {state.host}" if state.host else ""
            since = f"{where} since {state.started_utc}".strip()
            return JobStatus(job, "running", since, state, active=True)
        queued = f"queued as {state.scheduler_id}" if state.scheduler_id else "submitted"
        return JobStatus(job, "pending", queued, state, active=alive is True)
    if state.status == "failed":
        return JobStatus(job, "failed", state.error or "failed", state)
    return JobStatus(job, "pending", "report missing: runs again", state)


def job_statuses(sweep: LoadedSweep) -> list[JobStatus]:
    """Every job's status, read from the files the jobs wrote; whether a started job is still
    alive is asked of the executor that started it (the plan's may have changed since)."""
    executors = {sweep.executor.name: sweep.executor}
    found = []
    for job in sweep.jobs:
        state = read_state(job.state)
        name = state.executor if state is not None and state.executor else sweep.executor.name
        if name not in executors:
            options = sweep.plan.executors.get(name, {})
            try:
                executors[name] = build_executor(name, sweep.plan.resources, options, sweep.folder)
            except ConfigError:  # no longer registered: the plan's executor asks
                executors[name] = sweep.executor
        found.append(_status(job, state, executors[name]))
    return found


def run_sweep(sweep: LoadedSweep, *, overwrite: bool = False, wait: bool = True) -> list[SweepJob]:
    """Run every job not done yet; return the jobs handed to the executor.

    A changed job is refused (one ConfigError naming the first and how many) unless
    `overwrite`, which discards its report, per-sample results and state first (and those of
    failed jobs, which then start from scratch instead of resuming).
    """
    statuses = job_statuses(sweep)
    changed = [s for s in statuses if s.status == "changed"]
    if changed and not overwrite:
        first = changed[0]
        more = f" (and {len(changed) - 1} more jobs)" if len(changed) > 1 else ""
        raise ConfigError(
            f"job {first.job.job_id}{more} no longer matches its report's fingerprint "
            f"({first.detail}); pass --overwrite to discard its results and run it again, or "
            "restore the plan entry."
        )
    # --overwrite also starts failed jobs afresh: a store that cannot be resumed (written by
    # another robench version, say) would otherwise fail the same way on every run.
    discarded = changed + ([s for s in statuses if s.status == "failed"] if overwrite else [])
    for job in (status.job for status in discarded):
        for path in (job.report, *samples_files(job.report), job.state):
            path.unlink(missing_ok=True)
    todo = [s.job for s in statuses if s.status != "done" and not s.active]
    running = [s.job for s in statuses if s.active]
    for job in running:
        logger.warning("%s is already queued or running; not started again", job.job_id)
    skipped = len(statuses) - len(todo) - len(running)
    if skipped:
        logger.info("%d of %d jobs are done: skipped", skipped, len(statuses))
    if todo:
        make_folder(sweep.folder)
        logger.info("%d jobs to run with the %s executor", len(todo), sweep.executor.name)
        sweep.executor.run(todo, wait=wait)
    return todo
