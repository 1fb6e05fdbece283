"""An exclusive lock on a per-sample store, so two runs can never write one file
(docs/formats.md, "Crash safety": the lock file, its PID, why a killed run never blocks
`--resume`).

A flock belongs to the open file, so DataLoader workers forked while the store is open hold
it too: after a kill, the lock is free once they have noticed and exited (seconds).
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from robench._core.errors import ResumeError

logger = logging.getLogger(__name__)


def lock_path_for(store: Path) -> Path:
    """REPORT.samples.jsonl -> REPORT.samples.jsonl.lock."""
    return store.with_name(store.name + ".lock")


class StoreLock:
    """`with StoreLock(store):` or `acquire()` / `release()`; a held lock is a ResumeError."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.path = lock_path_for(store)
        self._fd: int | None = None

    def acquire(self) -> StoreLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _recorded_pid(fd)
                os.close(fd)
                raise ResumeError(_held_message(self.store, holder)) from None
            except OSError as exc:  # a file system without locks (some network mounts)
                os.close(fd)
                logger.warning(
                    "cannot lock %s (%s): concurrent runs are not detected", self.path, exc
                )
                return self
            # The holder removes the file on release while still holding it; if that happened
            # between our open and flock, we hold an orphan: open the new file instead.
            if _is_current(fd, self.path):
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        self.path.unlink(missing_ok=True)  # before unlocking: see acquire
        os.close(self._fd)  # drops the flock
        self._fd = None

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _is_current(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _recorded_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError):
        return None


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _held_message(store: Path, pid: int | None) -> str:
    if pid is not None and not is_alive(pid):
        return (
            f"{store} is still locked by processes of a run that has ended (PID {pid}; its "
            "data-loading workers are exiting); retry in a few seconds."
        )
    who = f"another robench run (PID {pid})" if pid is not None else "another robench run"
    stop = f"stop it (kill {pid}) and " if pid is not None else "stop it and "
    return (
        f"{who} is writing {store}; wait for it to finish, or {stop}rerun with --resume, or "
        "give this run another --out."
    )
