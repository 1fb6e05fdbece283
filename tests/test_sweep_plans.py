"""Sweep plans without running a model: bad input is one sentence and exit 2 with nothing
written, a changed plan entry is refused unless --overwrite, status reads the jobs' state
files, and a plugin adds an executor without touching the sweep's code."""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench.cli import app
from robench.evaluation.sweeps.jobs import PLAN_OPTIONS, plan_jobs
from robench.evaluation.sweeps.plan import read_plan
from robench.evaluation.sweeps.run_job import base_state
from robench.evaluation.sweeps.state import read_state, write_state

PLAN = """\
out_dir = "sweep"
suites = ["smoke"]
seeds = [0]

[[models]]
model = "vit_nano_fmnist"

[[models]]
model = "vit_nano_elliptical_fmnist"

[eval]
limit = 8
"""


def _plan(folder: Path, text: str = PLAN, extra: str = "") -> Path:
    path = folder / "plan.toml"
    path.write_text(text + extra)
    return path


def _sweep(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["sweep", *args])
    return result.exit_code, result.stdout, result.stderr


def _one_sentence_exit_2(plan: Path, *args: str) -> str:
    code, stdout, stderr = _sweep(str(plan), *args)
    assert code == 2, stderr
    assert stdout == ""
    message = " ".join(stderr.split())
    assert message.count(". ") <= 2 and message.endswith("."), message
    assert not (plan.parent / "sweep").exists(), "a refused sweep wrote into its folder"
    return message


@pytest.mark.parametrize(
    ("extra", "text", "expected"),
    [
        ('[[models]]\nmodel = "vit_nano_fmnits"\n', PLAN, "Did you mean 'vit_nano_fmnist'"),
        ("", PLAN.replace('"smoke"', '"smoek"'), "Did you mean 'smoke'"),
        ('[[models]]\nmodel = "vit_nano_fmnist"\n', PLAN, "duplicate jobs"),
        ("", PLAN.replace("seeds = [0]", "seeds = [0, 0]"), "duplicate jobs"),
        ('[[models]]\nname = "again"\nmodel = "vit_nano_fmnist"\n', PLAN, "duplicate jobs"),
        ("[resources]\ncpus = 4096\n", PLAN, "resources.cpus = 4096"),
        ("[resources]\ngpus = 64\n", PLAN, "resources.gpus = 64"),
        ("[resources]\nmem_gb = 1e6\n", PLAN, "resources.mem_gb"),
        ("", PLAN.replace("limit = 8", "limti = 8"), "Did you mean 'limit'"),
        ("", PLAN.replace("limit = 8", "out = 'x.json'"), "the plan sets it"),
        ("", 'executor = "sge"\n' + PLAN, "Unknown executor 'sge'"),
        ("[executors.local]\nworkerz = 2\n", PLAN, "[executors.local] is invalid"),
        ("", PLAN.replace("[[models]]", "[[model]]", 1), "sweep plan file"),
    ],
)
def test_bad_plans_are_one_sentence_and_exit_2(
    tmp_path: Path, extra: str, text: str, expected: str
) -> None:
    message = _one_sentence_exit_2(_plan(tmp_path, text, extra))
    assert expected in message


def test_slurm_without_sbatch_or_submitit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan(tmp_path, 'executor = "slurm"\n' + PLAN)
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch
    assert "sbatch, which is not on PATH" in _one_sentence_exit_2(plan)
    assert _sweep("status", str(plan))[0] == 0  # status reads files only
    monkeypatch.setitem(sys.modules, "submitit", None)  # not installed
    assert "needs submitit" in _one_sentence_exit_2(plan)


def test_every_plan_option_is_a_flag_of_robench_eval_written_as_its_flag_reads() -> None:
    from robench.cli.eval import eval_command
    from robench.evaluation.options import plan_options

    assert plan_options() == PLAN_OPTIONS
    params = {
        opt[2:].replace("-", "_"): param
        for param in typer.main.get_command(_eval_app(eval_command)).params
        for opt in param.opts
        if opt.startswith("--")
    }
    # Set by the sweep per job, or (format, dry_run) how a single command prints: no plan key.
    derived = {"checkpoint", "suite", "seed", "out", "resume", "overwrite", "format", "dry_run"}
    assert set(PLAN_OPTIONS) == set(params) - derived
    for key, kind in PLAN_OPTIONS.items():
        param = params[key]
        assert (kind == "switch") == bool(getattr(param, "is_flag", False)), key
        assert (kind in ("repeated", "data")) == param.multiple, key


def _eval_app(command: object) -> typer.Typer:
    single = typer.Typer(add_completion=False)
    single.command()(command)  # type: ignore[arg-type]
    return single


def test_report_paths_are_derived_from_the_plan(tmp_path: Path) -> None:
    plan_path = _plan(tmp_path)
    jobs = plan_jobs(read_plan(plan_path), plan_path)
    assert [job.job_id for job in jobs] == [
        "smoke/vit_nano_fmnist__seed0",
        "smoke/vit_nano_elliptical_fmnist__seed0",
    ]
    assert (
        jobs[0].report == tmp_path / "sweep" / "reports" / "smoke" / "vit_nano_fmnist__seed0.json"
    )
    command = jobs[0].command(resume=False)
    assert command[-4:] == ["--format", "markdown", "-o", str(jobs[0].report)]
    assert "--limit" in jobs[0].eval_args and jobs[0].command(resume=True)[-1] == "--resume"


def test_a_changed_entry_is_refused_until_overwrite(tmp_path: Path) -> None:
    plan_path = _plan(tmp_path)
    jobs = plan_jobs(read_plan(plan_path), plan_path)
    for job in jobs:  # as if both jobs had finished under this plan
        job.report.parent.mkdir(parents=True, exist_ok=True)
        job.report.write_text("{}")
        write_state(job.state, base_state(job, "local").model_copy(update={"status": "done"}))
    plan_path.write_text(PLAN.replace("limit = 8", "limit = 16"))
    code, _, stderr = _sweep(str(plan_path))
    message = " ".join(stderr.split())
    assert code == 2
    assert "no longer matches its report's fingerprint (plan entry changed: options)" in message
    assert "--overwrite" in message
    assert jobs[0].report.exists()  # nothing discarded without --overwrite

    code, stdout, _ = _sweep("status", str(plan_path), "--json")
    assert code == 0
    assert {row["status"] for row in json.loads(stdout)} == {"changed"}


def test_status_lists_done_running_failed_and_pending(tmp_path: Path) -> None:
    plan_path = _plan(tmp_path, PLAN.replace("seeds = [0]", "seeds = [0, 1]"))
    jobs = plan_jobs(read_plan(plan_path), plan_path)
    done, failed, gone, _pending = jobs
    done.report.parent.mkdir(parents=True, exist_ok=True)
    done.report.write_text("{}")
    write_state(done.state, base_state(done, "local").model_copy(update={"status": "done"}))
    write_state(
        failed.state,
        base_state(failed, "local").model_copy(
            update={"status": "failed", "error": "ConfigError: something is wrong."}
        ),
    )
    write_state(
        gone.state,
        base_state(gone, "local").model_copy(
            update={"status": "running", "host": socket.gethostname(), "pid": 2**22 + 7}
        ),
    )
    code, stdout, stderr = _sweep("status", str(plan_path))
    assert code == 0, stderr
    assert "| smoke/vit_nano_fmnist__seed0 | done |" in stdout
    assert "| failed | ConfigError: something is wrong. |" in stdout
    assert "interrupted: its process is gone" in stdout
    assert "4 jobs: 1 done, 2 failed, 1 pending" in " ".join(stderr.split())
    assert read_state(gone.state).status == "running"  # status only reads


PLUGIN = '''
from robench.evaluation.sweeps import EXECUTORS, Executor
from robench.evaluation.sweeps.state import write_state
from robench.evaluation.sweeps.run_job import base_state


@EXECUTORS.register("record")
class RecordingExecutor(Executor):
    """Writes each job's state as failed with a note instead of running it."""

    def run(self, jobs, *, wait):
        for job in jobs:
            state = base_state(job, self.name).model_copy(
                update={"status": "failed", "error": "recorded by the plugin"}
            )
            write_state(job.state, state)
'''


@pytest.fixture
def record_executor() -> Iterator[None]:
    """The plugin's executor is registered by the test's own file: forget it afterwards."""
    yield
    from robench.evaluation.sweeps import EXECUTORS

    if "record" in EXECUTORS:
        EXECUTORS.unregister("record")


@pytest.mark.usefixtures("record_executor")
def test_a_plugin_adds_an_executor(tmp_path: Path) -> None:
    (tmp_path / "record_executor.py").write_text(PLUGIN)
    plan = _plan(tmp_path, 'executor = "record"\nimports = ["record_executor.py"]\n' + PLAN)
    code, _, _ = _sweep(str(plan))
    assert code == 3  # every job "failed"
    code, stdout, _ = _sweep("status", str(plan), "--json")
    rows = json.loads(stdout)
    assert [row["detail"] for row in rows] == ["recorded by the plugin"] * 2


@pytest.mark.usefixtures("record_executor")
def test_overwrite_discards_changed_and_failed_jobs_only(tmp_path: Path) -> None:
    (tmp_path / "record_executor.py").write_text(PLUGIN)
    text = 'executor = "record"\nimports = ["record_executor.py"]\n' + PLAN
    plan_path = _plan(tmp_path, text)
    done, failed = plan_jobs(read_plan(plan_path), plan_path)
    for job, status in ((done, "done"), (failed, "failed")):
        job.report.parent.mkdir(parents=True, exist_ok=True)
        job.report.with_name(job.report.stem + ".samples.jsonl").write_text("{}\n")
        write_state(job.state, base_state(job, "record").model_copy(update={"status": status}))
    done.report.write_text("{}")
    assert _sweep(str(plan_path), "--overwrite")[0] == 3  # the plugin "fails" what it runs
    assert done.report.exists()  # finished and unchanged: kept, not run
    assert not failed.report.with_name(failed.report.stem + ".samples.jsonl").exists()
    assert read_state(failed.state).error == "recorded by the plugin"


def test_torchrun_inside_a_job(tmp_path: Path) -> None:
    plan_path = _plan(tmp_path, PLAN + "\n[resources]\ngpus = 4\ntorchrun = true\n")
    job = plan_jobs(read_plan(plan_path), plan_path)[0]
    command = job.command(resume=True)
    assert command[1:6] == [
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=4",
        "-m",
    ]
    assert command[6:8] == ["robench", "eval"] and command[-1] == "--resume"


def test_the_local_executor_splits_gpus_and_cores_between_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from robench.evaluation.sweeps.local import LocalExecutor, LocalOptions
    from robench.evaluation.sweeps.plan import Resources

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3,4")
    executor = LocalExecutor("local", Resources(gpus=2, cpus=1), LocalOptions(), tmp_path)
    assert executor._workers(10) == min(2, len(os.sched_getaffinity(0)))
    slots = executor._slots(2)
    assert [slot["CUDA_VISIBLE_DEVICES"] for slot in slots] == ["0,1", "2,3"]
    assert all(slot["OMP_NUM_THREADS"] == "1" for slot in slots)
    too_many = LocalExecutor("local", Resources(gpus=2), LocalOptions(workers=3), tmp_path)
    plan_path = _plan(tmp_path, PLAN.replace("seeds = [0]", "seeds = [0, 1]"))
    jobs = plan_jobs(read_plan(plan_path), plan_path)  # 4 jobs, 3 workers
    with pytest.raises(ConfigError, match="needs 6 GPUs but 5 are visible"):
        too_many.check(jobs)


def test_eval_options_become_flags(tmp_path: Path) -> None:
    options = """
[eval]
limit = 8
mean = [0.485, 0.456, 0.406]
input_size = [3, 28, 28]
data = { default = "fashion-mnist" }
import = ["a.py"]
sanity = true
channels_last = false
model_kwargs = { m_estimator = "paper" }
sanity_eps = "8/255"
"""
    plan_path = _plan(tmp_path, PLAN.replace("[eval]\nlimit = 8\n", options))
    args = plan_jobs(read_plan(plan_path), plan_path)[0].eval_args
    flags = " ".join(args)
    assert "--limit 8 --mean 0.485,0.456,0.406 --input-size 3,28,28" in flags
    assert "--data default=fashion-mnist --import a.py --sanity --model-kwargs" in flags
    assert '{"m_estimator": "paper"}' in args and "--channels-last" not in args
