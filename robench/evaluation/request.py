# long: evaluate() reads in order here (checks, set-up, first batches, run, report);
# each step is already its own function
"""`evaluate`: one checkpoint x one suite x named datasets -> a validated, atomically written
report.

This is the Python API behind `robench eval`. The suite, the model and every dataset belong to
one task (robench/tasks), which does everything task-specific: batches, scoring, records,
checks. Per-sample results stream to a file beside the report, so an interrupted evaluation
resumes with `resume=True` and ends in the same report.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from robench._core.distributed import DistributedContext, on_cuda_device
from robench._core.errors import (
    EXIT_USAGE,
    ConfigError,
    DeviceMemoryError,
    RobenchError,
    first_line,
)
from robench._core.overwrite_guard import refuse_overwriting_inputs
from robench._core.plugins import load_plugins
from robench._core.progress import Progress
from robench._core.seeding import seed_everything
from robench._core.version import __version__
from robench.data.in_memory import InMemory
from robench.data.unreadable import check_bad_image_policy
from robench.data.workers import check_workers, resolve_workers
from robench.evaluation.checks.eot_warnings import eot_warnings
from robench.evaluation.checks.required_extras import missing_for
from robench.evaluation.cost import summed
from robench.evaluation.datasets import RequestData, build_data, check_dataset_names
from robench.evaluation.environment import capture_environment
from robench.evaluation.fingerprint import input_paths, run_fingerprint
from robench.evaluation.fp32_precision import float32_precision
from robench.evaluation.jobs import resolve_jobs
from robench.evaluation.oom_fallback import is_out_of_memory
from robench.evaluation.options.applicability import check_applicable
from robench.evaluation.report_assembly import diagnostics, model_info, results, suite_info
from robench.evaluation.runner import Job, RunTimes, run_plan
from robench.evaluation.sanity.battery import run_battery
from robench.evaluation.sequential import (
    SequentialRun,
    StoppingRule,
    check_target,
    ordered_jobs,
    plan_sequential,
    prefix_records,
    values_in_order,
    with_sequence_intervals,
)
from robench.evaluation.speed import SpeedOptions, check_speed, prepare_model
from robench.evaluation.store.sample_store import (
    SampleRecords,
    SampleStore,
    check_fresh_start,
    merge_records,
    missing_folders,
    remove_empty_folders,
    samples_path_for,
)
from robench.evaluation.suites import LoadedSuite, load_suite
from robench.evaluation.transfer import (
    load_surrogates,
    plan_transfer,
    surrogate_fingerprint,
    with_surrogates,
)
from robench.models.loading import LoadedModel, load_model
from robench.models.spec import ModelSpec
from robench.perturbations.base import DatasetPerturbation
from robench.results.report.checks import check_attack_order
from robench.results.report.schema import (
    DEFAULT_DATASET,
    DiagnosticResult,
    PerturbationResult,
    Report,
    SanityBudgetInfo,
    SanityResult,
    check_writable,
    write_report,
)
from robench.results.stats.curve_checks import check_curves
from robench.tasks import TASKS, load_task
from robench.tasks.base import ModelCheck, Task
from robench.tasks.finite_values import nonfinite_allowed

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class EvalRequest:
    """Everything `robench eval` takes; `None` means "not given" (use the next source). A
    field is the option of the same name, whose help in robench/evaluation/options/__init__.py
    says what it means."""

    # A shipped suite's name or a TOML file; or a suite already read (`robench.evaluate`
    # builds one from Python entries).
    suite: str | LoadedSuite
    # None: the task's built-in data. `InMemory`: items held in memory
    # (`robench.evaluate(data=...)`), which the task opens as it opens a path.
    data: str | InMemory | Mapping[str, str | InMemory] | None
    out: Path
    model: str | None = None
    checkpoint: Path | None = None
    split: str = "test"
    class_map: Path | None = None
    limit: int | None = None
    subset: str | None = None  # robench/data/subset.py
    classes: str | None = None
    batch_size: int = 64
    seed: int = 0
    device: str = "auto"
    workers: int | str = "auto"  # a count, or "auto" (robench/data/workers.py)
    bad_images: str = "stop"
    allow_nonfinite: bool = False  # robench/tasks/finite_values.py
    imports: tuple[str, ...] = ()
    overrides: ModelSpec = field(default_factory=ModelSpec)
    ema: bool = False
    trust_checkpoint: bool = False
    trust_remote_code: bool = False
    resume: bool = False
    overwrite: bool = False
    allow_random_weights: bool = False
    # A MODEL string, or a model held in memory that `robench.evaluate` wrapped.
    surrogate: str | LoadedModel | None = None
    surrogate_checkpoint: Path | None = None
    sanity: bool = False
    sanity_eps: float | None = None
    sanity_budget: str | None = None  # docs/sanity.md
    data_options: dict[str, Any] = field(default_factory=dict)  # over the suite's
    speed: SpeedOptions = field(default_factory=SpeedOptions)
    target_halfwidth: float | None = None
    command: list[str] = field(default_factory=list)

    @property
    def datasets(self) -> dict[str, str | InMemory]:
        """The named datasets, in order; a single dataset is named "default"."""
        if isinstance(self.data, (str, InMemory)):
            return {DEFAULT_DATASET: self.data}
        if not self.data:
            raise ConfigError("no dataset was given; pass --data PATH (or NAME=PATH).")
        # An unnamed dataset is the default wherever it was given (`--data clean=VAL --data C`).
        named = dict(self.data)
        if DEFAULT_DATASET in named:
            named = {DEFAULT_DATASET: named.pop(DEFAULT_DATASET), **named}
        return named


def _check_output(request: EvalRequest, loaded_suite: LoadedSuite) -> None:
    """Refuse, before anything is written, a report path that would overwrite or land in an
    input, or that cannot be written."""
    written = [("--out", request.out), ("--out", samples_path_for(request.out))]
    refuse_overwriting_inputs(written, input_paths(request, loaded_suite), "the run")
    check_writable(request.out)


def _first_forward(loaded: LoadedModel, check: Callable[[], T]) -> T:
    """Run a check that calls the model on the first batch; a model that cannot run on the
    input at all is a configuration error (input size, channels, classes), not a failure."""
    try:
        return check()
    except (AssertionError, RuntimeError, ValueError, IndexError) as exc:
        if is_out_of_memory(exc):  # the input fits the model; the GPU is too small for it
            raise ConfigError(
                f"{loaded.name} ran out of GPU memory on the first batch's checks (up to 64 "
                "samples); pass a smaller --batch-size, free the GPU, or use one with more "
                "memory."
            ) from None
        prep = loaded.preprocessing
        size = f" of size {','.join(map(str, prep.input_size))}" if prep is not None else ""
        raise ConfigError(
            f"{loaded.name} cannot run on inputs{size} ({first_line(exc)}); check "
            "--input-size (or the model card's input_size), --num-classes and --model-kwargs "
            "against the model."
        ) from None


def _check_request(request: EvalRequest) -> None:
    """Refuse flag values no run can honour, before anything is loaded."""
    if request.batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1, got {request.batch_size}.")
    if request.limit is not None and request.limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {request.limit}.")
    check_bad_image_policy(request.bad_images)
    check_workers(request.workers)
    if request.resume and request.overwrite:
        raise ConfigError(
            "--resume keeps an interrupted run's results and --overwrite discards them; pass "
            "one of the two."
        )


def _target_halfwidth(request: EvalRequest, loaded_suite: LoadedSuite) -> float | None:
    """--target-halfwidth over the suite's `target_halfwidth`."""
    given = request.target_halfwidth
    return loaded_suite.suite.target_halfwidth if given is None else given


def _check_sequential(
    request: EvalRequest, loaded_suite: LoadedSuite, dist: DistributedContext
) -> None:
    target = _target_halfwidth(request, loaded_suite)
    check_target(target, loaded_suite.suite.name, loaded_suite.suite.metrics)
    if target is not None and dist.enabled:
        raise ConfigError(
            "a sequential run (--target-halfwidth) decides after every chunk on all samples "
            "so far, which torchrun's ranks do not share; run it in one process."
        )


def _load_model(request: EvalRequest, device: torch.device) -> LoadedModel:
    """The request's model; an architecture that rejects --model-kwargs while it is built
    (FAN with num_heads = 5: "dim 64 must be divisible by num_heads") is the input's fault."""
    try:
        return load_model(
            request.model,
            checkpoint=request.checkpoint,
            overrides=request.overrides,
            ema=request.ema,
            trust_checkpoint=request.trust_checkpoint,
            trust_remote_code=request.trust_remote_code,
            device=device,
        )
    except RobenchError:
        raise
    except (ValueError, AssertionError, TypeError) as exc:
        kwargs = request.overrides.model_kwargs
        if not kwargs:
            raise
        raise ConfigError(
            f"{request.model} cannot be built with --model-kwargs {json.dumps(kwargs)} "
            f"({first_line(exc)}); pass values its architecture accepts, or drop them."
        ) from None


@dataclass
class SetUp:
    """What `evaluate` has loaded before it runs: the suite, the model, its task, the data."""

    request: EvalRequest
    suite: LoadedSuite
    loaded: LoadedModel
    task: Task
    dist: DistributedContext
    data: RequestData


def set_up(
    request: EvalRequest, progress: Progress | None, model: LoadedModel | None = None
) -> SetUp:
    """Load the plugins, the suite, the model (unless given: `robench.evaluate` wraps one
    held in memory), its task and the data, checking each."""
    _check_request(request)
    # Plugins first: a suite may use a perturbation kind, metric, task or dataset layout
    # that one registers (and each --import runs once, so load_model gets none).
    load_plugins(request.imports)
    given = request.suite
    loaded_suite = given if isinstance(given, LoadedSuite) else load_suite(given)
    check_applicable(request, loaded_suite)  # options the suite cannot use: refused
    loaded_suite = plan_transfer(request, loaded_suite)  # --surrogate onto attack entries
    if request.data is None:
        request = replace(request, data=load_task(loaded_suite.suite.task).default_data)
    missing = missing_for(request.model, loaded_suite, request.datasets)
    if missing is not None:  # before anything is loaded
        raise missing
    _check_output(request, loaded_suite)
    check_dataset_names(loaded_suite, list(request.datasets))
    dist = DistributedContext.from_env(request.device)  # torchrun: shard batches over ranks
    _check_sequential(request, loaded_suite, dist)
    seed_everything(request.seed)  # a model without a checkpoint is initialised reproducibly
    loaded = model or _load_model(request, dist.device)
    if not loaded.has_weights and not request.allow_random_weights:
        raise ConfigError(
            f"{loaded.name} has no checkpoint, so its weights are random and its numbers "
            "would mean nothing; pass --checkpoint FILE (or a model card with weights), or "
            "--allow-random-weights to evaluate random weights on purpose."
        )
    suite_task = loaded_suite.suite.task
    # An image network that names no task is the suite's (its `check_data` checks the outputs).
    if not loaded.task_declared and TASKS.get(suite_task).inputs == "images":
        loaded = replace(loaded, task=suite_task)
    if suite_task != loaded.task:
        raise ConfigError(
            f"the suite is for {loaded_suite.suite.task} models but {loaded.name} is a model "
            f"for {loaded.task}; pick a suite for {loaded.task} (`robench list suites`)."
        )
    task = load_task(loaded_suite.suite.task)
    if (request.sanity or loaded_suite.suite.sanity) and not task.sanity_battery:
        raise ConfigError(  # before the run, not after it
            f"the sanity battery checks gradient attacks on image classifiers; it does not "
            f"apply to {task.name} models. Drop --sanity (or `sanity` from the suite)."
        )
    shown = progress if dist.is_main else None
    data = build_data(request, loaded, task, loaded_suite, shown)
    return SetUp(request, loaded_suite, loaded, task, dist, data)


@dataclass
class _FirstBatches:
    """The checks on every dataset's first batch, and that batch of the default dataset."""

    checks: ModelCheck
    warnings: list[str]  # the checks' warnings, then the data's adaptation notes
    inputs: torch.Tensor  # the default dataset's first batch of inputs
    scored: nn.Module  # the model as the default dataset scores it (its label space)


def _check_first_batches(s: SetUp) -> _FirstBatches:
    """Before scoring: the data's targets must mean the model's outputs (the task's
    `check_data`), and the model must run on the inputs (`check_model`)."""
    request, loaded, task, device = s.request, s.loaded, s.task, s.dist.device
    first_batches = {
        name: task.load_batch(
            source.dataset, list(source.indices[: min(request.batch_size, 64)]), device
        )
        for name, source in s.data.data.items()
    }
    scored_default = task.restrict_outputs(loaded.model, s.data.data[s.data.default].output_classes)
    notes = []
    for name, source in s.data.data.items():
        inputs, _ = first_batches[name]
        scored = task.restrict_outputs(loaded.model, source.output_classes)
        check_data = functools.partial(
            task.check_data, source.dataset, scored, inputs, mapped=request.class_map is not None
        )
        _first_forward(loaded, check_data)
        notes.append(task.adaptation_note(source.dataset, loaded.preprocessing))
    # Input gradients matter to attacks (and the sanity battery) only: a clean or corruption
    # suite does not pay for a backward pass.
    gradients = request.sanity or s.suite.suite.sanity or _has_attacks(s.suite)
    default_batch = first_batches[s.data.default]
    if gradients:  # the gradient checks' loss would fail on targets outside the outputs
        with nonfinite_allowed(True):  # here only targets; the runner names NaN's sample
            _first_forward(loaded, lambda: task.score(scored_default, *default_batch))
    checks = _first_forward(
        loaded, lambda: task.check_model(scored_default, *default_batch, gradients=gradients)
    )
    warnings = list(checks.warnings)
    for note in notes:
        if note and note not in warnings:
            warnings.append(note)
    return _FirstBatches(checks, warnings, default_batch[0], scored_default)


def _has_attacks(loaded_suite: LoadedSuite) -> bool:
    return any(p.eps is not None for p in loaded_suite.plan)


def _run(
    s: SetUp,
    model: nn.Module,
    jobs: list[tuple[str, Job]],
    fingerprint: dict[str, Any],
    speed: SpeedOptions,
    progress: Progress | None,
    sequential: SequentialRun | None = None,
) -> tuple[dict[str, SampleRecords], RunTimes]:
    """Run the jobs into the sample store; under torchrun, every rank's records. A
    sequential run goes chunk by chunk until its rule is settled (`sequential` then says
    where it stopped)."""
    request, dist = s.request, s.dist
    samples_path = samples_path_for(request.out, dist.rank if dist.enabled else None)
    check_fresh_start(samples_path, resume=request.resume, overwrite=request.overwrite)
    made = missing_folders(samples_path.parent)  # made for the store, removed with it
    store = SampleStore(samples_path, fingerprint, resume=request.resume)
    bad_input = False  # a fresh run stopped by bad input (a corrupt image) leaves no file
    try:
        run = functools.partial(
            run_plan,
            model,
            s.task,
            store=store,
            batch_size=request.batch_size,
            seed=request.seed,
            device=dist.device,
            workers=resolve_workers(request.workers, s.data.opened.values()),
            progress=progress if dist.is_main else None,
            shard=(dist.rank, dist.world_size),
            speed=speed,
            model_name=s.loaded.name,
            allow_nonfinite=request.allow_nonfinite,
        )
        if sequential is None:
            times = run([job for _, job in jobs])
        else:
            metrics = s.suite.suite.metrics
            times = sequential.run(run, lambda: store.records, jobs, metrics, request.batch_size)
        store.mark_complete()
    except DeviceMemoryError as exc:
        # Not the input's fault: what finished stays valid on a GPU with more memory.
        if store.empty:
            bad_input = not request.resume
            raise
        raise DeviceMemoryError(
            f"{str(exc).rstrip('.')}; the finished batches are kept in {samples_path}: rerun "
            "the same command with --resume to continue from them."
        ) from None
    except RobenchError as exc:
        bad_input = exc.exit_code == EXIT_USAGE and not request.resume
        raise
    finally:
        store.close()
        if bad_input:
            samples_path.unlink(missing_ok=True)
            remove_empty_folders(made)
    records = store.records
    if dist.enabled:  # every rank reads all shards; rank 0 alone writes the report
        dist.barrier()
        ranks = range(dist.world_size)
        records = merge_records([samples_path_for(request.out, r) for r in ranks], fingerprint)
        # A rank that ran out of GPU memory split its batches: the report gives the smallest
        # size any rank ran on, and where that rank first split.
        sizes = dist.gather((times.batch_size_used, times.batch_size_note))
        times.batch_size_used, times.batch_size_note = min(sizes, key=lambda size: size[0])
        times.passes = summed(dist.gather(times.passes))  # every rank's counted passes
    return records, times


def _after_the_suite(
    s: SetUp,
    first: _FirstBatches,
    suite_results: list[PerturbationResult],
    progress: Progress | None,
) -> tuple[list[SanityResult], SanityBudgetInfo | None, list[DiagnosticResult]]:
    """The sanity battery and the diagnostics, on the default dataset (main process only)."""
    if not s.dist.is_main:
        return [], None, []
    default = s.data.data[s.data.default]
    args = (s.task, first.scored, default.dataset, list(default.indices), s.dist.device)
    randomized = first.checks.randomized
    battery = run_battery(s.request, s.suite, *args, progress, suite_results, randomized)
    return (*battery, diagnostics(s.suite, *args, s.request.out, s.loaded.name))


def evaluate(
    request: EvalRequest,
    progress: Progress | None = None,
    stop_rule: StoppingRule | None = None,
    *,
    model: LoadedModel | None = None,
) -> Report:
    """Run the request's suite on its model and data; write and return the report.

    A sequential run (`request.target_halfwidth`, the suite's, or a gate's `stop_rule`) stops
    once its rule is met (docs/sequential.md). `model`: a model already loaded, used instead
    of `request.model`. CUDA runs in IEEE float32 unless `request.speed.tf32`, on `cuda:N` as
    its current device; the caller's settings are restored afterwards."""
    with float32_precision(request.speed.tf32), on_cuda_device(request.device):
        return _evaluate(request, progress, stop_rule, model)


def _evaluate(  # long: the run in order (set up, jobs, run, results, report); steps are functions
    request: EvalRequest,
    progress: Progress | None,
    stop_rule: StoppingRule | None,
    model: LoadedModel | None,
) -> Report:
    started = time.perf_counter()
    s = set_up(request, progress, model)
    request, loaded_suite, loaded, task = s.request, s.suite, s.loaded, s.task
    device = s.dist.device
    first = _check_first_batches(s)
    warnings = first.warnings
    jobs, missing = resolve_jobs(
        loaded_suite.plan, s.data.data, loaded_suite.suite.datasets, s.data.default
    )
    for gone in missing:
        logger.warning("not evaluated: %s: %s", gone.name, gone.reason)
    for _, job in jobs:  # data a dataset perturbation cannot edit: refused before any job runs
        if isinstance(job.planned.perturbation, DatasetPerturbation) and not job.prerendered:
            job.planned.perturbation.check_dataset(job.data.dataset)
    sequential = plan_sequential(
        loaded_suite.suite.metrics, _target_halfwidth(request, loaded_suite), stop_rule
    )
    if sequential is not None:
        jobs = ordered_jobs(jobs, request.seed)
    if not loaded.has_weights:
        warnings.insert(0, f"no checkpoint: {loaded.architecture} has random weights.")
    for warning in warnings:
        logger.warning(warning)

    speed = replace(request.speed, amp_attacks=loaded_suite.suite.amp_attacks)
    if speed.attacks_in_amp and _has_attacks(loaded_suite):
        warnings.append(
            f"attacks ran in {speed.amp} (--amp with the suite's amp_attacks): reduced-precision "
            "gradients can weaken an attack and scoring moves borderline samples, so robust "
            "accuracy may read higher than in float32."
        )
        logger.warning(warnings[-1])
    check_speed(speed, device, first.inputs)
    run_model = prepare_model(loaded.model, speed, first.inputs)
    surrogates = load_surrogates(request, loaded_suite, loaded, first.inputs, device, speed)
    jobs, self_transfer = with_surrogates(jobs, surrogates)
    missing += self_transfer
    for warning in eot_warnings(loaded_suite.plan, first.checks.randomized, surrogates):
        logger.warning(warning)
        warnings.append(warning)
    env = capture_environment(device, speed.precision(device))
    fingerprint = run_fingerprint(request, loaded, loaded_suite, s.data, device, speed)
    if surrogates:  # transfer: the surrogates' weights decide the records too
        fingerprint["surrogates"] = surrogate_fingerprint(surrogates)
    if sequential is not None:  # its batches hold other samples than a fixed-n run's
        fingerprint["order"] = "sequential"
    records, times = _run(s, run_model, jobs, fingerprint, speed, progress, sequential)

    if sequential is not None:
        records = prefix_records(records, jobs, sequential.n_stopped)
    suite_results, samples = results(loaded_suite, task, jobs, records, times)
    if sequential is not None:
        values, _ = values_in_order(jobs, records, sequential.covered, sequential.n_stopped)
        suite_results = with_sequence_intervals(
            suite_results, values, sequential.covered, sequential.target
        )
    result_checks = check_attack_order(suite_results)
    for check in result_checks:
        if check.status == "warn":
            logger.warning("check %s: %s", check.name, check.detail)
            warnings.append(check.detail)
    with nonfinite_allowed(request.allow_nonfinite):  # the battery scores as the run did
        sanity, sanity_budget, found = _after_the_suite(s, first, suite_results, progress)
    report = Report(
        robench_version=__version__,
        created_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=request.command,
        task=task.name,
        environment=env,
        model=model_info(loaded, first.checks.randomized),
        suite=suite_info(loaded_suite),
        datasets=s.data.infos(task, request.limit),
        seed=request.seed,
        batch_size=request.batch_size,
        speed=speed.info(times.batch_size_used, times.batch_size_note),
        results=suite_results,
        warnings=warnings,
        samples=samples,
        diagnostics=found,
        sanity=sanity,
        sanity_budget=sanity_budget,
        checks=result_checks,
        missing=missing,
        sequential=sequential.info(request.batch_size) if sequential else None,
        wall_time_s=round(time.perf_counter() - started, 3),
    )
    # Curves from attacks' per-sample columns: minimal-norm against PGD, convergence.
    for check in check_curves(report):
        report.checks.append(check)
        if check.status == "warn":
            logger.warning("check %s: %s", check.name, check.detail)
            report.warnings.append(check.detail)
    if loaded_suite.suite.aggregates:
        from robench.results.stats.aggregates import compute_aggregates

        report.aggregates = compute_aggregates(report, loaded_suite.suite.aggregates)
        report.wall_time_s = round(time.perf_counter() - started, 3)
    if s.dist.is_main:
        write_report(report, request.out)
    s.dist.close()
    return report
