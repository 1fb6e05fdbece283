"""Crash-safe runs: kill an evaluation (SIGKILL, SIGTERM, SIGINT, one torchrun rank) part-way,
resume it, and get the uninterrupted run's report, with every sample stored exactly once; a
torn last line is dropped, a corrupt one refused, and two runs never write one store."""

from __future__ import annotations

import json
import math
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from robench._core.errors import ResumeError
from robench.cli import app
from robench.evaluation.interrupts import Interrupted, resume_command, stop_cleanly
from robench.evaluation.store.lock import lock_path_for
from robench.evaluation.store.sample_store import SampleStore, merge_records, samples_path_for

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
IMAGE = ["eval", "vit_nano_fmnist", "-s", "smoke", "--limit", "256", "-b", "16", "--format", "json"]
TEXT = ["eval", "transformer_lm_nano_pydocs", "-s", "text-smoke", "--data", "pydoc-topics",
        "--limit", "120", "-b", "8", "--format", "json"]  # fmt: skip


def _start(args: list[str], out: Path, launcher: tuple[str, ...] = ()) -> subprocess.Popen:
    if launcher:  # torchrun ARGS -m robench ...
        argv = [str(BIN / launcher[0]), *launcher[1:], "-m", "robench", *args]
    else:
        argv = [str(BIN / "robench"), *args]
    return subprocess.Popen(
        [*argv, "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
    )


def _run(args: list[str], out: Path) -> dict[str, Any]:
    """The report of an uninterrupted run, and its store under "_store"."""
    proc = _start(args, out)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    return {**json.loads(out.read_text()), "_store": samples_path_for(out)}


def _batches(store: Path) -> int:
    return max(store.read_bytes().count(b"\n") - 1, 0) if store.exists() else 0


def _wait_for_batches(store: Path, n: int, proc: subprocess.Popen) -> None:
    """Block until `store` holds `n` finished batches (the run is then inside its loop)."""
    deadline = time.monotonic() + 240
    while _batches(store) < n:
        assert proc.poll() is None, f"the run ended before {n} batches: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {n} batches in {store}"
        time.sleep(0.005)


def _resume_line(stderr: str) -> list[str]:
    """The command printed under "resume with:"."""
    lines = stderr.splitlines()
    at = next(i for i, line in enumerate(lines) if line.endswith("resume with:"))
    return shlex.split(lines[at + 1])


def _assert_same_report(report: dict[str, Any], baseline: dict[str, Any]) -> None:
    assert report["samples"] == baseline["samples"]
    assert report["datasets"] == baseline["datasets"]

    def strip(result: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in result.items() if k != "wall_time_s"}

    # The cost too: the per-sample file keeps each stored batch's passes, so a resumed run
    # counts the batches the killed process finished (docs/formats.md, "Counted passes").
    assert [strip(r) for r in report["results"]] == [strip(r) for r in baseline["results"]]
    assert all(r.get("cost") for r in report["results"])


def _assert_each_sample_stored_once(stores: list[Path], report: dict[str, Any], n: int) -> None:
    stored: dict[str, list[int]] = {}
    for store in stores:
        for line in store.read_text().splitlines()[1:]:
            entry = json.loads(line)
            if "p" in entry:
                stored.setdefault(entry["p"], []).extend(entry["i"])
    assert set(stored) == {r["name"] for r in report["results"]}
    for result in report["results"]:
        indices = stored[result["name"]]
        assert len(indices) == len(set(indices)) == n, result["name"]  # none twice, none lost
        assert sorted(indices) == report["samples"][result["dataset"]]["indices"]
        assert result["n_samples"] == n


def _assert_nothing_half_written(out: Path) -> None:
    assert not out.exists(), "a stopped run must not leave a report"
    assert not list(out.parent.glob(f".{out.name}.*")), "nor a temporary report"


@pytest.fixture(scope="module")
def image_baseline(tmp_path_factory: pytest.TempPathFactory, fashion_mnist_dir: Path) -> dict:
    return _run(IMAGE, tmp_path_factory.mktemp("baseline") / "image.json")


@pytest.fixture(scope="module")
def text_baseline(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _run(TEXT, tmp_path_factory.mktemp("baseline") / "text.json")


def test_sigkill_then_resume_gives_the_uninterrupted_report(
    image_baseline: dict, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    store = tmp_path / "r.samples.jsonl"
    proc = _start(IMAGE, out)
    _wait_for_batches(store, 3, proc)
    proc.kill()
    proc.communicate(timeout=60)
    _assert_nothing_half_written(out)
    done = _batches(store)
    assert done < 48 and b'"complete"' not in store.read_bytes()
    # The killed run's lock file is left, with its PID; the kernel has dropped its flock.
    assert lock_path_for(store).read_text().strip() == str(proc.pid)
    # A kill in the middle of a write leaves a torn last line: resume drops it.
    whole = store.read_bytes()
    torn = whole.splitlines(keepends=True)[-1][:40]
    store.write_bytes(whole + torn)

    resumed = subprocess.run(
        [str(BIN / "robench"), *IMAGE, "-o", str(out), "--resume"],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert "dropped a partial last line" in resumed.stderr
    report = json.loads(out.read_text())
    _assert_same_report(report, image_baseline)
    _assert_each_sample_stored_once([store], report, 256)
    assert not lock_path_for(store).exists()


def test_sigterm_and_sigint_stop_cleanly_and_print_the_resume_command(
    image_baseline: dict, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    store = tmp_path / "r.samples.jsonl"
    first = [*IMAGE, "--overwrite"]
    proc = _start(first, out)
    _wait_for_batches(store, 3, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "stopped by SIGTERM" in stderr and str(store) in stderr
    command = _resume_line(stderr)  # the original argv, --overwrite dropped, --resume added
    assert command == ["robench", *IMAGE, "-o", str(out), "--resume"]
    _assert_nothing_half_written(out)
    assert store.read_bytes().endswith(b"\n") and not lock_path_for(store).exists()

    # Run the printed command, and stop it with Ctrl-C (SIGINT) once it runs.
    resume = [str(BIN / "robench"), *command[1:]]
    before = _batches(store)
    # A test run started in the background of a non-interactive shell (`.ci/run &`) ignores
    # SIGINT, and an ignored signal stays ignored in the children it starts: catch it here
    # while starting the run, so that the run starts with Ctrl-C's default, as in a terminal.
    caught = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(
            resume, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV
        )
    finally:
        signal.signal(signal.SIGINT, caught)
    # At its first new batch: the rest of the run (about 45 batches) is the window in which
    # the signal must land, even when this process is scheduled late on a loaded machine.
    _wait_for_batches(store, before + 1, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "stopped by SIGINT" in stderr
    assert _resume_line(stderr) == command  # no second --resume
    _assert_nothing_half_written(out)

    done = subprocess.run(resume, capture_output=True, text=True, timeout=300, env=ENV)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    _assert_same_report(report, image_baseline)
    _assert_each_sample_stored_once([store], report, 256)


def test_killing_one_torchrun_rank_then_resuming_gives_the_single_process_report(
    image_baseline: dict, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    stores = [tmp_path / f"r.samples.rank{rank}.jsonl" for rank in (0, 1)]
    launcher = ("torchrun", "--nproc_per_node=2")
    agent = _start(IMAGE, out, launcher)
    _wait_for_batches(stores[1], 3, agent)
    children = subprocess.run(
        ["pgrep", "-P", str(agent.pid)], capture_output=True, text=True, check=True
    ).stdout.split()
    rank1 = [pid for pid in children if b"\0RANK=1\0" in Path(f"/proc/{pid}/environ").read_bytes()]
    assert len(children) == 2 and len(rank1) == 1, children
    os.kill(int(rank1[0]), signal.SIGKILL)
    _, stderr = agent.communicate(timeout=120)
    assert agent.returncode != 0
    # torchrun stops rank 0 with SIGTERM; rank 0 says how to resume the whole job.
    assert "stopped by SIGTERM" in stderr, stderr
    command = _resume_line(stderr)
    assert command == ["torchrun", "--nproc_per_node=2", "-m", "robench", *IMAGE, "-o", str(out),
                       "--resume"]  # fmt: skip
    _assert_nothing_half_written(out)
    assert all(b'"complete"' not in store.read_bytes() for store in stores)

    done = subprocess.run(
        [str(BIN / "torchrun"), *command[1:]], capture_output=True, text=True, timeout=300, env=ENV
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    _assert_same_report(report, image_baseline)
    _assert_each_sample_stored_once(stores, report, 256)


def test_a_language_model_run_resumes_after_sigkill(text_baseline: dict, tmp_path: Path) -> None:
    out = tmp_path / "lm.json"
    store = tmp_path / "lm.samples.jsonl"
    proc = _start(TEXT, out)
    _wait_for_batches(store, 2, proc)
    proc.kill()
    proc.communicate(timeout=60)
    _assert_nothing_half_written(out)
    assert b'"complete"' not in store.read_bytes()
    resumed = subprocess.run(
        [str(BIN / "robench"), *TEXT, "-o", str(out), "--resume"],
        capture_output=True, text=True, timeout=300, env=ENV,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(out.read_text())
    _assert_same_report(report, text_baseline)
    _assert_each_sample_stored_once([store], report, 120)


def test_a_second_run_on_the_same_report_is_refused_while_the_first_runs(
    fashion_mnist_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    store = tmp_path / "r.samples.jsonl"
    args = [*IMAGE[:4], "--limit", "4096", *IMAGE[6:]]
    first = _start(args, out)
    try:
        _wait_for_batches(store, 1, first)
        second = subprocess.run(
            [str(BIN / "robench"), *args, "-o", str(out)],
            capture_output=True, text=True, timeout=300, env=ENV,
        )  # fmt: skip
        assert second.returncode == 2
        [line] = second.stderr.strip().splitlines()
        assert line.startswith("error: another robench run (PID ")
        assert f"(PID {first.pid}) is writing {store}" in line and "--resume" in line
        # In-process too, with --resume (would truncate a torn line) and --overwrite (would
        # empty the file): refused before the store is touched.
        for flag in ("--resume", "--overwrite"):
            size = store.stat().st_size
            result = CliRunner().invoke(app, [*args, "-o", str(out), flag])
            assert result.exit_code == 2, result.output
            assert f"(PID {first.pid}) is writing" in result.stderr
            assert store.stat().st_size >= size and store.read_text().startswith('{"robench')
        assert first.poll() is None, "the first run must be unaffected"
    finally:
        first.kill()
        first.communicate(timeout=60)


def test_a_corrupt_line_inside_the_store_is_one_error_line(
    image_baseline: dict, tmp_path: Path
) -> None:
    """A torn line can only be the last; a bad one before it means the file was damaged."""
    out = tmp_path / "c.json"
    lines = image_baseline["_store"].read_bytes().splitlines(keepends=True)
    lines[4] = lines[4][:30] + b"\n"
    (tmp_path / "c.samples.jsonl").write_bytes(b"".join(lines))
    result = CliRunner().invoke(app, [*IMAGE, "-o", str(out), "--resume"])
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {tmp_path / 'c.samples.jsonl'} line 5 is corrupt")
    assert "--overwrite" in line and not out.exists()


# Unit level: the store, the lock and the signal handler, without a model.

FINGERPRINT = {"seed": 0}


def _columns(indices: list[int]) -> dict[str, list[Any]]:
    return {"y": [i % 10 for i in indices]}


def test_store_drops_a_torn_last_line_and_refuses_a_corrupt_middle_one(tmp_path: Path) -> None:
    path = tmp_path / "r.samples.jsonl"
    store = SampleStore(path, FINGERPRINT, resume=False)
    store.append("clean", [0, 1], _columns([0, 1]))
    store.append("clean", [2, 3], _columns([2, 3]))
    store.close()
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"p":"clean","i":[4,5],"y":[4')  # killed mid-write
    store = SampleStore(path, FINGERPRINT, resume=True)
    assert store.records == {"clean": {i: {"y": i} for i in range(4)}}
    assert store.done("clean") == {0, 1, 2, 3}  # what a resumed run skips
    store.append("clean", [4, 5], _columns([4, 5]))
    assert store.records["clean"][5] == {"y": 5}
    store.close()
    assert path.read_bytes().startswith(whole)  # the torn bytes are gone, whole batches kept

    lines = whole.splitlines(keepends=True)
    bad_lines = (
        b"{not json\n",
        b'{"p":"clean","i":[0,1],"y":[0]}\n',  # a column shorter than the indices
        b'{"p":"clean","i":[[0],1],"y":[0,1]}\n',  # indices that are not integers
        b'{"p":"clean","i":3,"y":[0]}\n',
        b'{"p":"clean","i":[0,1]}\n',  # no columns
        b'{"p":"clean","i":[0,1],"y":[0,1],"_passes":[1,2]}\n',  # passes: not four integers
        b"[1, 2]\n",
        b"\xff\xfe\n",
    )
    for bad in bad_lines:
        path.write_bytes(lines[0] + bad + lines[2])
        with pytest.raises(ResumeError, match=r"r\.samples\.jsonl line 2 is corrupt.*--overwrite"):
            SampleStore(path, FINGERPRINT, resume=True)
        assert not lock_path_for(path).exists()  # a refused open releases the lock


def test_a_resumed_store_hands_its_stored_passes_over_once(tmp_path: Path) -> None:
    """Each batch line keeps the passes it cost; a resumed store sums them per result and
    hands them to the first job that asks (a sequential run's chunks share one store). A
    batch written without them (an older file) makes the sum unknown, not smaller."""
    path = tmp_path / "r.samples.jsonl"
    store = SampleStore(path, FINGERPRINT, resume=False)
    store.append("pgd", [0, 1], _columns([0, 1]), [42, 40, 2, 2])
    store.append("pgd", [2, 3], _columns([2, 3]), [44, 40, 2, 2])
    store.append("clean", [0, 1], _columns([0, 1]))  # no passes recorded
    store.close()
    resumed = SampleStore(path, FINGERPRINT, resume=True)
    assert resumed.records["pgd"][3] == {"y": 3}  # `_passes` is no column
    assert resumed.claim_resumed_passes("pgd") == [86, 80, 4, 4]
    assert resumed.claim_resumed_passes("pgd") is None  # claimed once
    assert resumed.claim_resumed_passes("clean") is None
    resumed.close()


def test_every_column_value_reads_back_as_written(tmp_path: Path) -> None:
    """Lines are written by orjson, which would turn NaN and infinity into null and refuses
    integers over 64 bits; those lines fall back to `json`, so resume sees the same values."""
    path = tmp_path / "r.samples.jsonl"
    batches = [
        ([0, 1], {"nll": [1.25, 0.1], "topk": [[3, 1], [2, 0]]}),  # the fast path
        ([2, 3], {"nll": [float("nan"), float("inf")], "topk": [[1, 2], [0, 1]]}),
        ([4, 5], {"nll": [None, -float("inf")], "topk": [[2**70, 1], [0, 1]]}),
        ([6, 7], {"nll": [1e-5, 3.0], "topk": [["null", "é"], ["", "x"]]}),
    ]
    store = SampleStore(path, {"seed": 0, "name": "null-space"}, resume=False)
    for indices, columns in batches:
        store.append("clean", indices, columns)
    store.close()
    lines = path.read_bytes().splitlines()
    assert json.loads(lines[1]) == {"p": "clean", "i": [0, 1], **batches[0][1]}
    assert b"NaN" in lines[2] and b"Infinity" in lines[2] and b"null" not in lines[2]
    records = SampleStore(path, {"seed": 0, "name": "null-space"}, resume=True).records["clean"]
    assert records[0] == {"nll": 1.25, "topk": [3, 1]}
    assert math.isnan(records[2]["nll"]) and records[3]["nll"] == float("inf")
    assert records[4] == {"nll": None, "topk": [2**70, 1]}
    assert records[5]["nll"] == -float("inf")
    assert records[6] == {"nll": 1e-5, "topk": ["null", "é"]}


def test_an_open_store_locks_out_every_other_writer(tmp_path: Path) -> None:
    path = tmp_path / "r.samples.jsonl"
    store = SampleStore(path, FINGERPRINT, resume=False)
    store.append("clean", [0], _columns([0]))
    for resume in (True, False):
        with pytest.raises(ResumeError, match=rf"another robench run \(PID {os.getpid()}\)"):
            SampleStore(path, FINGERPRINT, resume=resume)
    assert len(path.read_bytes().splitlines()) == 2  # neither truncated nor appended to
    # Every rank reads every shard at the end, without the lock.
    assert merge_records([path], FINGERPRINT) == {"clean": {0: {"y": 0}}}
    store.close()
    assert not lock_path_for(path).exists()
    # A lock file left by a killed run (its PID, no flock) does not block.
    lock_path_for(path).write_text("999999999\n")
    SampleStore(path, FINGERPRINT, resume=True).close()


def test_resume_command_adds_resume_once_drops_overwrite_and_keeps_the_launcher(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    command = ["robench", "eval", "m", "--overwrite", "-o", "a b.json"]
    assert resume_command(command) == ["robench", "eval", "m", "-o", "a b.json", "--resume"]
    assert resume_command(resume_command(command)) == resume_command(command)
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    assert resume_command(command)[:5] == ["torchrun", "--nnodes=2", "--nproc_per_node=4",
                                           "-m", "robench"]  # fmt: skip


def test_sigterm_inside_stop_cleanly_is_interrupted_with_exit_143(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM)
    report = tmp_path / "r.json"
    command = ["robench", "eval", "-o", str(report)]
    with pytest.raises(Interrupted) as stopped, stop_cleanly(command, report):
        (tmp_path / "r.samples.jsonl").write_text("{}\n")  # this run saved a batch
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises here
    assert stopped.value.exit_code == 143
    assert stopped.value.message is not None
    assert stopped.value.message.endswith(f"robench eval -o {report} --resume")
    assert signal.getsignal(signal.SIGTERM) == before
    with pytest.raises(Interrupted) as stopped, stop_cleanly(["robench"], tmp_path / "x.json"):
        raise KeyboardInterrupt
    assert stopped.value.exit_code == 130
    assert "before this run saved a result" in (stopped.value.message or "")
