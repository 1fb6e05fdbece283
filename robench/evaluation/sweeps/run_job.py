"""One job, wherever an executor runs it: `robench eval` as a child process (no torch here),
its output in the job's log, its state file written before and after; an interrupted job
continues with `--resume`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from robench.evaluation.sweeps.jobs import SweepJob
from robench.evaluation.sweeps.state import (
    JobState,
    now_utc,
    read_state,
    resumable,
    this_host,
    write_state,
)

__all__ = ["CPUS_VARIABLE", "last_error_line", "run_job"]

# The cores an executor gives a job, comma-separated (the local executor's share of a worker).
CPUS_VARIABLE = "ROBENCH_SWEEP_CPUS"

# Exit codes of a job's own process that a signal caused (robench eval's interrupts module
# exits 130 on SIGINT and 143 on SIGTERM; a negative code is a signal that killed it).
_SIGNALS = {130: "interrupted (SIGINT)", 143: "cancelled (SIGTERM)", -9: "killed (SIGKILL)"}


def last_error_line(log: Path) -> str | None:
    """The last non-empty line of a log: a robench error is one line; a traceback's last
    line is the exception."""
    try:
        with log.open("rb") as fh:
            fh.seek(max(0, log.stat().st_size - 8192))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        text = line.strip()
        if text and not text.startswith("# robench sweep"):
            return text[:500]
    return None


def base_state(job: SweepJob, executor: str | None) -> JobState:
    """A job's state before it first runs."""
    return JobState(
        job_id=job.job_id,
        fingerprint=job.fingerprint,
        spec=job.spec,
        status="pending",
        report=str(job.report),
        log=str(job.log),
        executor=executor,
    )


def _starting(job: SweepJob, executor: str | None, scheduler_id: str | None) -> JobState:
    state = read_state(job.state)
    if state is None or state.fingerprint != job.fingerprint:
        state = base_state(job, executor)
    return state.model_copy(
        update={
            "status": "running",
            "error": None,
            "exit_code": None,
            "executor": executor,
            "scheduler_id": scheduler_id or state.scheduler_id,
            "host": this_host(),
            "pid": os.getpid(),
            "started_utc": now_utc(),
            "finished_utc": None,
            "attempts": state.attempts + 1,
            "resumed": resumable(job.report),
        }
    )


def run_job(
    job: SweepJob,
    executor: str | None = None,
    *,
    env: dict[str, str] | None = None,
    scheduler_id: str | None = None,
    timeout_s: float | None = None,
) -> JobState:
    """Run the job's evaluation to its end; return (and write) its final state.

    `env` is what the executor gives this worker (its GPUs, its threads); a failed
    evaluation is a failed state, never an exception, so it never stops the other jobs.
    """
    started = time.perf_counter()
    state = _starting(job, executor, scheduler_id or _scheduler_id())
    write_state(job.state, state)
    command = job.command(resume=state.resumed)
    job.log.parent.mkdir(parents=True, exist_ok=True)
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **job.env, **(env or {})}
    with job.log.open("ab") as log:
        log.write(f"# robench sweep {now_utc()} on {this_host()}: {' '.join(command)}\n".encode())
        log.flush()
        evaluation = time.perf_counter()  # the eval's wall time counts from its spawn
        try:
            process = subprocess.Popen(
                command, cwd=job.cwd, stdout=log, stderr=subprocess.STDOUT, env=child_env
            )
        except OSError as exc:
            return _finish(job, state, 127, f"cannot start {command[0]}: {exc.strerror}", started)
        _pin(process.pid, child_env.get(CPUS_VARIABLE))
        write_state(job.state, state.model_copy(update={"pid": process.pid}))
        try:
            code = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.terminate()
            code = process.wait()
            reason = f"time limit of {timeout_s:.0f} s reached"
            return _finish(job, state, code, reason, started, evaluation)
        except BaseException:  # the worker itself is stopped: stop the evaluation cleanly
            process.terminate()
            process.wait()
            raise
    return _finish(job, state, code, None, started, evaluation)


def _pin(pid: int, cpus: str | None) -> None:
    """Keep the evaluation on its worker's cores (before it starts its threads)."""
    if cpus and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError, ValueError):  # it ended already, or a bad list
            os.sched_setaffinity(pid, {int(cpu) for cpu in cpus.split(",")})


def _scheduler_id() -> str | None:
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    if array and task:
        return f"{array}_{task}"
    return os.environ.get("SLURM_JOB_ID")


def _finish(
    job: SweepJob,
    state: JobState,
    code: int,
    reason: str | None,
    started: float,
    evaluation: float | None = None,
) -> JobState:
    now = time.perf_counter()
    done = code == 0 and reason is None and job.report.exists()
    if done:
        error = None
    elif reason is not None:
        error = reason
    elif code in _SIGNALS or code < 0:
        error = _SIGNALS.get(code, f"killed by signal {-code}")
    else:
        error = last_error_line(job.log) or f"exit code {code}, no report"
    final = state.model_copy(
        update={
            "status": "done" if done else "failed",
            "exit_code": code,
            "error": error,
            "finished_utc": now_utc(),
            "job_s": round(time.perf_counter() - started, 4),
            "eval_s": round(now - evaluation, 4) if evaluation is not None else None,
        }
    )
    write_state(job.state, final)
    return final
