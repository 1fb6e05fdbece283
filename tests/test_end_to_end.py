"""End to end: train a nano ViT for a few seconds, evaluate it from the CLI, check the report,
interrupt an evaluation and resume it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import jsonschema
import pytest
import torch
from typer.testing import CliRunner

from robench.cli import app
from robench.evaluation.request import EvalRequest, evaluate
from robench.evaluation.store.sample_store import SampleStore
from robench.results.report.schema import report_json_schema

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory, fashion_mnist_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("train")
    result = CliRunner().invoke(
        app,
        [
            "train",
            "vit_nano_patch4_28",
            "--max-steps",
            "40",
            "--train-limit",
            "2000",
            "--val-limit",
            "200",
            "--val-every",
            "20",
            "--warmup-steps",
            "5",
            "--lr",
            "3e-3",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "best val top-1" in result.stdout
    return out / "best.safetensors"


def test_train_then_eval_from_the_cli_writes_a_schema_valid_report(
    checkpoint: Path, tmp_path: Path
) -> None:
    report_path = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "-c",
            str(checkpoint),
            "--suite",
            "smoke",
            "--limit",
            "64",
            "-o",
            str(report_path),
            "--format",
            "markdown",
        ],
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(report_path.read_text())
    jsonschema.validate(report, report_json_schema())
    assert report["model"]["architecture"] == "vit_nano_patch4_28"
    assert report["model"]["config_sources"]["mean"] == "checkpoint metadata"
    assert len(report["model"]["checkpoint_sha256"]) == 64
    assert report["datasets"]["default"]["n_samples"] == 64
    assert report["datasets"]["default"]["kind"] == "idx"
    results = {r["name"]: r for r in report["results"]}
    clean = results["clean"]["metrics"]["top1"]["value"]
    assert clean > 0.2, "40 steps of training should beat chance (10%) clearly"
    for name in ("fgsm", "pgd-5"):
        top1 = results[name]["metrics"]["top1"]
        assert top1["value"] <= clean
        assert top1["ci95"][0] <= top1["value"] <= top1["ci95"][1]
    # stdout holds the table only; the report path note goes to stderr.
    assert "| clean" in result.stdout and "report written" in result.stderr
    assert report_path.with_name("report.samples.jsonl").exists()


def _request(checkpoint: Path, out: Path, **kw: object) -> EvalRequest:
    options: dict[str, object] = {
        "suite": "smoke", "limit": 48, "batch_size": 16, "seed": 3, **kw
    }  # fmt: skip
    return EvalRequest(
        data="fashion-mnist",
        out=out,
        checkpoint=checkpoint,
        **options,  # type: ignore[arg-type]
    )


def test_an_interrupted_run_resumes_to_the_same_report(
    checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = evaluate(_request(checkpoint, tmp_path / "full.json"))

    original = SampleStore.append
    calls = {"n": 0}

    def flaky_append(self: SampleStore, *args: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 5:  # after 4 of the 9 batches (3 perturbations x 3 batches)
            raise KeyboardInterrupt
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SampleStore, "append", flaky_append)
    partial_path = tmp_path / "partial.json"
    with pytest.raises(KeyboardInterrupt):
        evaluate(_request(checkpoint, partial_path))
    assert not partial_path.exists(), "an interrupted run must not leave a report"
    monkeypatch.setattr(SampleStore, "append", original)

    with pytest.raises(Exception, match="--resume"):
        evaluate(_request(checkpoint, partial_path))
    resumed = evaluate(_request(checkpoint, partial_path, resume=True))
    assert resumed.samples == full.samples
    # A resumed run counts the passes of the samples it ran itself (docs/formats.md,
    # "Counted cost"): its totals differ, its passes per sample do not.
    blank = {"wall_time_s": 0.0, "cost": None}
    strip = [r.model_copy(update=blank) for r in resumed.results]
    assert strip == [r.model_copy(update=blank) for r in full.results]
    for part, whole in zip(resumed.results, full.results, strict=True):
        if part.cost is not None and whole.cost is not None:
            assert part.cost.passes_per_sample == whole.cost.passes_per_sample


def test_resume_refuses_results_of_a_different_run(checkpoint: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    evaluate(_request(checkpoint, out))
    from robench._core.errors import ResumeError

    with pytest.raises(ResumeError, match="seed"):
        evaluate(
            _request(
                checkpoint,
                out,
                seed=4,
                resume=True,
            )
        )


def test_same_command_gives_the_same_report(checkpoint: Path, tmp_path: Path) -> None:
    a = evaluate(_request(checkpoint, tmp_path / "a.json"))
    b = evaluate(_request(checkpoint, tmp_path / "b.json"))
    assert a.samples == b.samples
    assert [r.metrics for r in a.results] == [r.metrics for r in b.results]


def _torchrun_eval(
    checkpoint: Path, suite: str, out: Path, *extra: str
) -> subprocess.CompletedProcess:
    """`robench eval` in two gloo processes, with `_request`'s limit, batch size and seed."""
    torchrun = Path(sys.executable).with_name("torchrun")
    done = subprocess.run(
        [str(torchrun), "--nproc_per_node=2", "-m", "robench", "eval", "-c", str(checkpoint),
         "--suite", suite, "--limit", "48", "--batch-size", "16", "--seed", "3",
         "-o", str(out), "--format", "json", *extra],
        capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


def test_torchrun_shards_batches_and_writes_the_same_report(
    checkpoint: Path, tmp_path: Path
) -> None:
    single = evaluate(_request(checkpoint, tmp_path / "single.json"))
    out = tmp_path / "sharded.json"
    done = _torchrun_eval(checkpoint, "smoke", out)
    sharded = json.loads(out.read_text())
    assert sharded["samples"] == single.model_dump(mode="json")["samples"]
    printed = json.loads(done.stdout)  # one report on stdout, rank 0's
    assert printed["datasets"]["default"]["n_samples"] == 48
    assert (tmp_path / "sharded.samples.rank1.jsonl").exists()


# Imported by both ranks (--import): rank 1's run model fails above 4 samples with CUDA's
# out-of-memory error, simulated on CPU.
RANK1_OUT_OF_MEMORY = """
import os

import torch

import robench.evaluation.request as request

if os.environ.get("RANK") == "1":
    class _OutOfMemoryAbove4(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            if x.shape[0] > 4:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")
            return self.model(x)

    prepare = request.prepare_model
    request.prepare_model = lambda *args: _OutOfMemoryAbove4(prepare(*args))
"""


def test_torchrun_reports_the_smallest_batch_any_rank_ran_on(
    checkpoint: Path, tmp_path: Path
) -> None:
    suite = tmp_path / "clean.toml"
    suite.write_text('name = "c"\nversion = 1\n[[perturbations]]\nkind = "clean"\n')
    plugin = tmp_path / "rank1_oom.py"
    plugin.write_text(RANK1_OUT_OF_MEMORY)
    out = tmp_path / "sharded.json"
    _torchrun_eval(checkpoint, str(suite), out, "--import", str(plugin))
    report = json.loads(out.read_text())
    assert report["speed"]["batch_size_used"] == 4  # rank 1's, where rank 0 kept 16
    assert "clean batch 1 on 16 samples" in report["speed"]["batch_size_note"]
    single = evaluate(_request(checkpoint, tmp_path / "one.json", suite=str(suite)))
    assert report["samples"] == single.model_dump(mode="json")["samples"]


AUTOATTACK_SUITE = """
name = "aa-shards"
version = 1
[[perturbations]]
kind = "autoattack"
name = "apgd-linf"
eps = "4/255"
attacks = ["apgd-ce", "apgd-t"]
n_iter = 5
n_target_classes = 2
[[perturbations]]
kind = "autoattack"
name = "apgd-l2"
norm = "l2"
eps = 0.5
attacks = ["apgd-ce"]
n_iter = 5
"""


@contextmanager
def _intra_op_threads(n: int) -> Iterator[None]:
    saved = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def test_autoattack_under_torchrun_gives_the_single_process_verdicts(
    checkpoint: Path, tmp_path: Path
) -> None:
    """AutoAttack is sharded like every attack: two gloo processes, the same per-sample
    verdicts (and identical reruns), for L-infinity and L2."""
    suite = tmp_path / "aa.toml"
    suite.write_text(AUTOATTACK_SUITE)
    # The ranks run on one intra-op thread each (OMP_NUM_THREADS=1); the reference runs on one
    # too: APGD-L2's per-sample values differ in the last float bits between thread counts.
    with _intra_op_threads(1):
        single = evaluate(_request(checkpoint, tmp_path / "single.json", suite=str(suite)))
        again = evaluate(_request(checkpoint, tmp_path / "again.json", suite=str(suite)))
    assert again.samples == single.samples  # AutoAttack is seeded: identical reruns
    out = tmp_path / "sharded.json"
    _torchrun_eval(checkpoint, str(suite), out)
    sharded = json.loads(out.read_text())
    assert sharded["samples"] == single.model_dump(mode="json")["samples"]
    assert len(single.samples["default"].indices) == 48
    assert {r["name"]: r["params"]["budget_display"] for r in sharded["results"]} == {
        "apgd-linf": "Linf 4/255",
        "apgd-l2": "L2 0.5",
    }
