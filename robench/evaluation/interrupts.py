"""Stopping a run cleanly on SIGINT (Ctrl-C) or SIGTERM (a scheduler, `timeout`, torchrun);
exit codes, messages and torchrun's ranks: docs/formats.md, "Crash safety", "Signals".

Inside `stop_cleanly(command, report)`, SIGTERM raises `Terminated` in the main thread, as
SIGINT raises KeyboardInterrupt: both are BaseExceptions, so no `except Exception` swallows
them, and every `finally` runs (the store closes and fsyncs, a report being written is
removed). On the way out either becomes `Interrupted`, carrying the exit code and the resume
command.
"""

from __future__ import annotations

import os
import shlex
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType


class Terminated(BaseException):
    """SIGTERM arrived inside `stop_cleanly`."""


class Interrupted(BaseException):
    """The run stopped on a signal; finished batches are saved."""

    def __init__(self, signum: int, message: str | None) -> None:
        super().__init__(message)
        self.exit_code = 128 + signum
        # What to tell the user; None on ranks other than 0 of a torchrun job.
        self.message = message


def resume_command(command: Sequence[str]) -> list[str]:
    """The run's command (`robench eval ...`) with --resume and without --overwrite, behind
    the torchrun launcher it ran under."""
    args = [arg for arg in command if arg != "--overwrite"]
    if "--resume" not in args:
        args.append("--resume")
    return _launched(args)


def _launched(command: Sequence[str]) -> list[str]:
    """`robench ...` behind `torchrun --nproc_per_node=N -m` when it runs under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return list(command)
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
    nodes = [f"--nnodes={world // per_node}"] if world != per_node else []
    return ["torchrun", *nodes, f"--nproc_per_node={per_node}", "-m", *command]


def _message(signum: int, command: Sequence[str], report: Path, started: float) -> str:
    from robench.evaluation.store.sample_store import samples_path_for

    world = int(os.environ.get("WORLD_SIZE", "1"))
    samples = samples_path_for(report, int(os.environ.get("RANK", "0")) if world > 1 else None)
    name = signal.Signals(signum).name
    if not samples.exists() or samples.stat().st_mtime < started:  # this run saved nothing
        return (
            f"stopped by {name} before this run saved a result; rerun the same command:\n"
            f"  {shlex.join(_launched(command))}"
        )
    nodes = " on every node" if world > int(os.environ.get("LOCAL_WORLD_SIZE", str(world))) else ""
    where = f"{samples} and the other ranks' files" if world > 1 else str(samples)
    return (
        f"stopped by {name}: finished batches are saved in {where}; resume{nodes} with:\n"
        f"  {shlex.join(resume_command(command))}"
    )


_owner = {"pid": 0}  # the process that installed the handler


def _terminate(signum: int, frame: FrameType | None) -> None:
    # A process forked from the run that kept this handler ends as SIGTERM would end it.
    if os.getpid() != _owner["pid"]:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    raise Terminated


_MTIME_SLACK_S = 1.0


@contextmanager
def stop_cleanly(command: Sequence[str], report: Path) -> Iterator[None]:
    """Turn SIGINT and SIGTERM into `Interrupted` (with the resume command for `report`)."""
    if threading.current_thread() is not threading.main_thread():  # signals go to main
        yield
        return
    _owner["pid"] = os.getpid()
    previous = signal.signal(signal.SIGTERM, _terminate)
    main = os.environ.get("RANK", "0") == "0"
    # The kernel stamps files from a coarser clock than time.time(), so a batch saved just
    # after the start can carry an earlier mtime; a second of slack (as the demo's file
    # listing allows) keeps it counted as this run's.
    started = time.time() - _MTIME_SLACK_S
    try:
        yield
    except (KeyboardInterrupt, Terminated) as exc:
        signum = signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM
        message = _message(signum, command, report, started) if main else None
        raise Interrupted(signum, message) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
