"""Per-sample results appended to a JSON-lines file as a run goes, so nothing is lost on
interruption and `--resume` continues exactly where the run stopped.

The file's lines and crash safety (flushes, fsyncs, torn last lines, the lock): docs/formats.md,
"Per-sample results" and "Crash safety". The store never looks inside a column.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from robench._core.errors import ConfigError, ResumeError
from robench.evaluation.store.lock import StoreLock
from robench.tasks.base import Columns, records_of

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
# Finished batches reach the disk at least this often (an fsync per batch cost about 3% of a
# fast clean evaluation).
FSYNC_INTERVAL_S = 1.0


# A perturbation's records: dataset index -> the task's record of that sample.
SampleRecords = dict[int, dict[str, Any]]
# A perturbation's stored batches, in order: (indices, the task's record columns).
Batches = list[tuple[list[int], Columns]]
# The key of a batch's counted passes: not a column (one value per batch, not per index).
PASSES_KEY = "_passes"
Passes = list[int]  # [forward, backward, scoring forward, samples]

# The standard library's encoder, for what orjson writes differently (see `_encode`); built
# once, and without the check for circular references (the store writes fresh dicts and lists).
_ENCODER = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def _encode(obj: dict[str, Any]) -> bytes:
    """One line of the store: orjson, 14x faster than `json` on a batch of top-5 predictions
    (1.5% of a clean evaluation, benchmarks/bench_harness.py). orjson writes NaN and infinity
    as null and refuses integers over 64 bits, so a line holding a null, or one orjson refuses,
    is written by `json` instead: every value reads back as it was written."""
    try:
        line = orjson.dumps(obj)
    except orjson.JSONEncodeError:
        line = b"null"
    if b"null" in line:
        line = _ENCODER.encode(obj).encode()
    return line + b"\n"


def _records(batches: Batches) -> SampleRecords:
    """Batches -> one record per index (a later batch wins, as when appended)."""
    records: SampleRecords = {}
    for indices, columns in batches:
        records.update(zip(indices, records_of(columns), strict=True))
    return records


def samples_path_for(report_path: Path, rank: int | None = None) -> Path:
    """REPORT.samples.jsonl, or REPORT.samples.rankN.jsonl for one process under torchrun."""
    shard = f".rank{rank}" if rank is not None else ""
    return report_path.with_name(report_path.name.removesuffix(".json") + f".samples{shard}.jsonl")


def missing_folders(folder: Path) -> list[Path]:
    """`folder` and its ancestors that do not exist yet, deepest first: what opening a store
    there creates, and what a run refused for bad input removes again."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def remove_empty_folders(folders: list[Path]) -> None:
    """Remove `folders` (deepest first) while they are empty; one holding a file stays."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (another rank's file, a user's), or already gone
            return


def merge_records(paths: list[Path], fingerprint: dict[str, Any]) -> dict[str, SampleRecords]:
    """The records of every per-rank file of a torchrun evaluation, by perturbation; read
    without the lock, once all ranks have closed theirs."""
    merged: dict[str, Batches] = {}
    for path in paths:
        raw = path.read_bytes()
        parsed, _ = _parse(path, raw[: raw.rfind(b"\n") + 1], fingerprint)
        for name, batches in parsed.items():
            merged.setdefault(name, []).extend(batches)
    return {name: _records(batches) for name, batches in merged.items()}


class SampleStore:
    """Append-only store; open with `resume=True` to keep what an earlier run wrote."""

    def __init__(self, path: Path, fingerprint: dict[str, Any], *, resume: bool) -> None:
        self.path = path
        self.fingerprint = fingerprint
        # Records are built when asked for (`records`): per batch, only its columns are kept,
        # and which indices are done.
        self._batches: dict[str, Batches] = {}
        self._done: dict[str, set[int]] = {}
        # The passes of the batches an earlier run stored, per perturbation, until claimed
        # (`claim_resumed_passes`); None where a batch has none (a file from before they were
        # stored).
        self._resumed: dict[str, Passes | None] = {}
        self._synced = 0.0  # monotonic time of the last fsync
        # Locked before anything is read or truncated: a running run's file is never touched.
        self._lock = StoreLock(path).acquire()
        try:
            self._open(resume)
        except BaseException:
            self._lock.release()
            raise

    def _open(self, resume: bool) -> None:
        path, fingerprint = self.path, self.fingerprint
        if resume and path.exists():
            self._load_existing()
            self._fh: BinaryIO = path.open("ab")
        else:
            if resume:
                raise ResumeError(
                    f"--resume was given but {path} does not exist; run without --resume to "
                    "start a new evaluation."
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = path.open("wb")
            header = {"robench_samples": FORMAT_VERSION, "fingerprint": fingerprint}
            self._write(header, sync=True)

    def _load_existing(self) -> None:
        raw = self.path.read_bytes()
        # A run killed mid-write leaves a partial last line: drop it, keep every whole batch.
        complete = raw[: raw.rfind(b"\n") + 1]
        if len(complete) != len(raw):
            logger.warning(
                "%s: dropped a partial last line (%d bytes) left by an interrupted write",
                self.path,
                len(raw) - len(complete),
            )
            with self.path.open("r+b") as fh:
                fh.truncate(len(complete))
        self._batches, passes = _parse(self.path, complete, self.fingerprint)
        for name, batches in self._batches.items():
            self.done(name).update(i for indices, _ in batches for i in indices)
        self._resumed = {name: _summed(counts) for name, counts in passes.items()}

    def _write(self, obj: dict[str, Any], *, sync: bool = False) -> None:
        self._fh.write(_encode(obj))
        self._fh.flush()  # in the kernel's hands: survives the death of this process
        now = time.monotonic()
        if sync or now - self._synced >= FSYNC_INTERVAL_S:
            os.fsync(self._fh.fileno())
            self._synced = now

    @property
    def records(self) -> dict[str, SampleRecords]:
        """Every perturbation's records so far: dataset index -> the task's record."""
        return {name: _records(batches) for name, batches in self._batches.items()}

    @property
    def empty(self) -> bool:
        """No batch stored yet (by this run or the one it resumes)."""
        return not any(self._batches.values())

    def done(self, name: str) -> set[int]:
        """The dataset indices of `name` already stored."""
        return self._done.setdefault(name, set())

    def claim_resumed_passes(self, name: str) -> Passes | None:
        """The summed passes of `name`'s batches stored by an earlier run, once (a sequential
        run's chunks share the store; the first claims them); None when there are none, or
        when a stored batch did not record its passes."""
        return self._resumed.pop(name, None)

    def append(
        self, name: str, indices: list[int], columns: Columns, passes: Passes | None = None
    ) -> None:
        """Store one finished batch: the task's record columns, aligned with `indices`, and
        the passes it cost."""
        if not columns or any(len(values) != len(indices) for values in columns.values()):
            raise ValueError(f"{name}: a batch needs columns of one value per index")
        line = {"p": name, "i": indices, **columns}
        self._write(line if passes is None else {**line, PASSES_KEY: passes})
        self._batches.setdefault(name, []).append((indices, columns))
        self.done(name).update(indices)

    def mark_complete(self) -> None:
        self._write({"complete": True}, sync=True)

    def close(self) -> None:
        try:
            if not self._fh.closed:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            self._fh.close()
        finally:
            self._lock.release()


def _summed(counts: list[Passes | None]) -> Passes | None:
    """Batches' passes added up, or None if any batch has none."""
    known = [count for count in counts if count is not None]
    return [sum(n) for n in zip(*known, strict=True)] if len(known) == len(counts) else None


def _parse(
    path: Path, complete: bytes, fingerprint: dict[str, Any]
) -> tuple[dict[str, Batches], dict[str, list[Passes | None]]]:
    """The batches of a store's whole lines, and each batch's passes (None where a line has
    none); a wrong header or a bad line is a ResumeError."""
    lines = complete.splitlines()
    try:
        header = json.loads(lines[0]) if lines else {}
    except (json.JSONDecodeError, UnicodeDecodeError):
        header = {}
    if not isinstance(header, dict) or header.get("robench_samples") != FORMAT_VERSION:
        raise ResumeError(f"{path} is not a robench per-sample file; remove it.")
    old = header.get("fingerprint", {})
    if old != fingerprint:
        changed = sorted(k for k in {*fingerprint, *old} if old.get(k) != fingerprint.get(k))
        raise ResumeError(
            f"cannot resume from {path}: it was written by a different run "
            f"(differs in {', '.join(changed)}); use the same command, or drop --resume."
        )
    batches: dict[str, Batches] = {}
    passes: dict[str, list[Passes | None]] = {}
    for number, line in enumerate(lines[1:], start=2):
        try:
            entry = json.loads(line)
            if entry == {"complete": True}:  # the marker of an earlier finished run
                continue
            name, indices = entry.pop("p"), entry.pop("i")
            counted = entry.pop(PASSES_KEY, None)
            if counted is not None and not (
                isinstance(counted, list)
                and len(counted) == 4
                and all(type(c) is int for c in counted)
            ):
                raise ValueError("the batch's passes are not four integers")
            passes.setdefault(name, []).append(counted)
            if not isinstance(indices, list) or not all(isinstance(i, int) for i in indices):
                raise ValueError("the indices are not a list of integers")
            if not entry or any(len(values) != len(indices) for values in entry.values()):
                raise ValueError("no columns, or a column not aligned with the indices")
            batches.setdefault(name, []).append((indices, entry))
        except (ValueError, TypeError, KeyError, AttributeError):  # JSON, UTF-8, shape
            raise ResumeError(
                f"{path} line {number} is corrupt (not one whole batch record), so its results "
                "cannot be trusted; rerun with --overwrite instead of --resume to start again."
            ) from None
    return batches, passes


def check_fresh_start(samples: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse to discard an interrupted run's results unless asked to."""
    if resume or overwrite or not samples.exists():
        return
    with StoreLock(samples):  # a running run's file is not an interrupted one
        pass
    lines = samples.read_bytes().splitlines()
    if lines and lines[-1].strip() == b'{"complete":true}':  # a finished run's marker
        return
    raise ConfigError(
        f"an interrupted run left per-sample results in {samples}; pass --resume to continue "
        "it, or --overwrite to discard them and start again."
    )
