"""A plan's jobs: one `robench eval` command line per (model, suite, seed), with the paths of
its report, log and state derived from the plan (so they are the same on every run), and the
fingerprint that tells whether a job's files still belong to its plan entry. Everything is
checked before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robench._core.errors import ConfigError
from robench._core.registry import did_you_mean
from robench.evaluation.options import EVAL_OPTIONS, plan_options
from robench.evaluation.options.ranges import flag_of
from robench.evaluation.suite_files import bundled_suites  # torch-free, no kinds' schemas
from robench.evaluation.sweeps.plan import ModelEntry, OptionValue, SweepPlan, out_dir

__all__ = ["PLAN_OPTIONS", "SweepJob", "plan_jobs"]

# The `robench eval` options a plan may set, by plan key, with the kind of value each takes
# (eval_option.CLI_FORMS); the others (model, checkpoint, suite, seed, report path, --resume,
# --overwrite, --format) come from the plan or the sweep.
PLAN_OPTIONS: dict[str, str] = plan_options()
_SET_BY_THE_SWEEP = {o.plan_key for o in EVAL_OPTIONS.values() if not o.in_plans}


def _values(value: OptionValue) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _option_args(name: str, value: OptionValue) -> list[str]:
    """One option as `robench eval` arguments."""
    kind, flag = PLAN_OPTIONS[name], flag_of(name)
    if kind == "switch":
        if not isinstance(value, bool):
            raise ConfigError(f"eval option {name} = {value!r}: give true or false.")
        return [flag] if value else []
    if kind == "json":
        return [flag, json.dumps(value, sort_keys=True)]
    if kind == "comma":
        return [flag, ",".join(_values(value))]
    if kind == "data" and isinstance(value, dict):
        return [arg for key, path in value.items() for arg in (flag, f"{key}={path}")]
    if kind in ("repeated", "data"):
        return [arg for v in _values(value) for arg in (flag, v)]
    if isinstance(value, (list, dict)):
        raise ConfigError(f"eval option {name} = {value!r}: give one value, not a list.")
    return [flag, str(value).lower() if isinstance(value, bool) else str(value)]


def _check_option_names(options: dict[str, OptionValue], where: str) -> None:
    for name in options:
        if name not in PLAN_OPTIONS:
            why = (
                " (the plan sets it: models, suites, seeds; the sweep its report path)"
                if name in _SET_BY_THE_SWEEP
                else ""
            )
            raise ConfigError(
                f"{where}: {did_you_mean(name, list(PLAN_OPTIONS), 'eval option')[:-1]}"
                f"{why}; see docs/sweeps.md."
            )


@dataclass(frozen=True)
class SweepJob:
    """One (model, suite, seed): the eval it runs and where its files go."""

    job_id: str  # SUITE/LABEL__seedN, unique in the sweep
    label: str  # the model's name in the plan
    suite: str  # as the plan names it
    seed: int
    eval_args: list[str]  # `robench eval` arguments, without -o, --resume and --overwrite
    spec: dict[str, Any]  # what decides the job's results (compared to the state's)
    cwd: Path  # the plan's folder: every relative path of the plan is relative to it
    report: Path
    log: Path
    state: Path
    processes: int = 1  # torchrun's processes per job; 1 without torchrun
    env: dict[str, str] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.spec, sort_keys=True).encode()).hexdigest()

    def command(self, *, resume: bool, overwrite: bool = False) -> list[str]:
        """The process to run: `python -m robench eval ...`, under torchrun for several
        processes."""
        n = self.processes
        torchrun = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={n}"]
        launcher = [sys.executable, *(torchrun if n > 1 else []), "-m", "robench"]
        tail = ["--resume"] if resume else ["--overwrite"] if overwrite else []
        return [*launcher, "eval", *self.eval_args, "-o", str(self.report), *tail]


def _file_identity(cwd: Path, path: str | None) -> list[int] | None:
    """Size and modification time of a checkpoint or card: a replaced file changes the job."""
    if path is None or not (cwd / path).is_file():
        return None
    stat = (cwd / path).stat()
    return [stat.st_size, stat.st_mtime_ns]


def _check_suite(suite: str, cwd: Path) -> None:
    candidate = Path(suite)
    if candidate.suffix == ".toml" or len(candidate.parts) > 1:
        if not (cwd / candidate).is_file():
            raise ConfigError(
                f"the plan's suite {suite} does not exist (relative to {cwd}); pass a .toml "
                "suite file or a shipped suite name (`robench list suites`)."
            )
    elif suite not in (shipped := list(bundled_suites())):
        raise ConfigError(
            f"the plan's suites: {did_you_mean(suite, shipped, 'suite')[:-1]}"
            " (or a path to a .toml suite file)."
        )


def _known_names() -> list[str]:
    from robench.models.spec import bundled_cards
    from robench.models.zoo_names import LANGUAGE_MODELS, ZOO_MODELS

    return [*ZOO_MODELS, *LANGUAGE_MODELS, *bundled_cards()]


def _check_model(entry: ModelEntry, cwd: Path, has_plugins: bool) -> None:
    """A model that `robench eval` would not find is refused before any job starts."""
    for what, path in (("card", entry.card), ("checkpoint", entry.checkpoint)):
        if path is not None and not (cwd / path).is_file():
            raise ConfigError(
                f"model {entry.label}: {what} {path} does not exist (relative to {cwd}); fix "
                "the path in the plan."
            )
    name = entry.model
    if name is None or has_plugins:  # a plugin may register it: `robench eval` checks then
        return
    from robench.models.sources.registry import load_source_entry_points, split_source

    load_source_entry_points()
    found = split_source(name)
    if found is not None:  # hf:, local-dir:, ...: the source checks its target when it runs
        missing = found[0].missing_extra(name)  # but a missing optional extra fails them all
        if missing is not None:
            raise missing
        return
    if name.endswith(".toml"):
        if not (cwd / name).is_file():
            raise ConfigError(f"model card {name} does not exist (relative to {cwd}).")
        return
    known = _known_names()
    if name in known:
        return
    import timm  # only for a name robench does not know itself

    if timm.is_model(name.split(".", 1)[0]):
        return
    raise ConfigError(
        f"the plan's models: {did_you_mean(name, known, 'model')[:-1]} (or a timm "
        "architecture, a PREFIX:TARGET source or a model card .toml)."
    )


def _job_options(plan: SweepPlan, entry: ModelEntry) -> dict[str, OptionValue]:
    _check_option_names(plan.eval, "[eval]")
    _check_option_names(entry.options, f"model {entry.label}'s options")
    return {**plan.eval, **entry.options}


def plan_jobs(plan: SweepPlan, plan_path: Path) -> list[SweepJob]:
    """Every job of the plan, checked; a duplicate job is refused."""
    cwd = plan_path.resolve().parent
    folder = out_dir(plan, plan_path)
    for suite in plan.suites:
        _check_suite(suite, cwd)
    seen_seeds = [seed for i, seed in enumerate(plan.seeds) if seed in plan.seeds[:i]]
    if seen_seeds:
        raise ConfigError(f"duplicate jobs: seed {seen_seeds[0]} is listed twice in seeds.")
    jobs: list[SweepJob] = []
    by_id: dict[str, SweepJob] = {}
    by_spec: dict[str, SweepJob] = {}
    for entry in plan.models:
        options = _job_options(plan, entry)
        _check_model(entry, cwd, has_plugins=bool(options.get("import")))
        args_common: list[str] = [entry.target] if entry.target is not None else []
        if entry.checkpoint is not None:
            args_common += ["--checkpoint", entry.checkpoint]
        option_args = [arg for name, value in options.items() for arg in _option_args(name, value)]
        tail = [*option_args, "--format", "markdown"]
        for suite in plan.suites:
            for seed in plan.seeds:
                stem = f"{entry.label}__seed{seed}"
                suite_dir = Path(suite).stem
                spec = {
                    "model": entry.target,
                    "checkpoint": entry.checkpoint,
                    "suite": suite,
                    "seed": seed,
                    "options": options,
                    "processes": plan.resources.processes,
                    "model_file": _file_identity(cwd, entry.target),
                    "checkpoint_file": _file_identity(cwd, entry.checkpoint),
                    "suite_file": _file_identity(cwd, suite),
                }
                job = SweepJob(
                    job_id=f"{suite_dir}/{stem}",
                    label=entry.label,
                    suite=suite,
                    seed=seed,
                    eval_args=[*args_common, "--suite", suite, "--seed", str(seed), *tail],
                    spec=spec,
                    cwd=cwd,
                    report=folder / "reports" / suite_dir / f"{stem}.json",
                    log=folder / "logs" / suite_dir / f"{stem}.log",
                    state=folder / "jobs" / suite_dir / f"{stem}.json",
                    processes=plan.resources.processes,
                )
                _refuse_duplicate(job, by_id, by_spec)
                jobs.append(job)
    return jobs


def _refuse_duplicate(
    job: SweepJob, by_id: dict[str, SweepJob], by_spec: dict[str, SweepJob]
) -> None:
    if job.job_id in by_id:
        raise ConfigError(
            f"duplicate jobs: two models are named {job.label!r} (job {job.job_id}); give "
            "each model entry a distinct `name`."
        )
    same = {key: value for key, value in job.spec.items() if key != "processes"}
    key = json.dumps(same, sort_keys=True)
    if key in by_spec:
        raise ConfigError(
            f"duplicate jobs: models {by_spec[key].label!r} and {job.label!r} are the same "
            f"evaluation (job {job.job_id}); remove one of the two entries."
        )
    by_id[job.job_id] = job
    by_spec[key] = job
