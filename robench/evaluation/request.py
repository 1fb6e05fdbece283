"""`evaluate`: one checkpoint x one suite x named datasets -> a validated, atomically written
report.

This is the Python API behind `robench eval`. The suite, the model and every dataset belong to
one task (robench/tasks), which does everything task-specific: batches, scoring, records,
checks. Per-sample results stream to a file beside the report, so an interrupted evaluation
resumes with `resume=True` and ends in the same report.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn
from torch.utils.data import Dataset

from robench._core.distributed import DistributedContext
from robench._core.errors import (
    EXIT_USAGE,
    ConfigError,
    DataError,
    DeviceMemoryError,
    RobenchError,
    first_line,
)
from robench._core.model_hooks import report_sections, supports_adaptive_attack
from robench._core.progress import Progress
from robench._core.seeding import seed_everything
from robench._core.version import __version__
from robench.data import LabeledImages
from robench.data.preprocessing import Preprocessing
from robench.data.subset import indices_sha256, resolve_subset, select_indices
from robench.data.unreadable import Unreadable, check_bad_image_policy, find_unreadable
from robench.evaluation.environment import capture_environment
from robench.evaluation.jobs import data_key, resolve_jobs
from robench.evaluation.oom_fallback import is_out_of_memory
from robench.evaluation.runner import EvalData, Job, RunTimes, run_plan
from robench.evaluation.sample_store import (
    SampleRecords,
    SampleStore,
    check_fresh_start,
    merge_records,
    samples_path_for,
)
from robench.evaluation.speed import SpeedOptions, check_speed, prepare_model
from robench.evaluation.suites import LoadedSuite, load_suite
from robench.models.loading import LoadedModel, load_model
from robench.models.plugins import load_plugins
from robench.models.restricted import restrict_outputs
from robench.models.spec import ModelSpec
from robench.results.checks import check_attack_order
from robench.results.metrics import METRICS
from robench.results.report import (
    DEFAULT_DATASET,
    DataInfo,
    DiagnosticResult,
    LabelSpaceInfo,
    MetricValue,
    ModelInfo,
    PerturbationResult,
    Report,
    SampleResults,
    SanityBudgetInfo,
    SanityResult,
    SkippedSample,
    SuiteInfo,
    check_writable,
    write_report,
)
from robench.tasks import TASKS, load_task
from robench.tasks.base import Task

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class EvalRequest:
    """Everything `robench eval` takes; `None` means "not given" (use the next source)."""

    suite: str
    # One dataset (a path or built-in name), or named datasets {name: path}; suite entries
    # pick one by name (`dataset = "imagenet-r"`), the first is the default. None: the task's
    # built-in data (Fashion-MNIST, or the Python docs for language models).
    data: str | Mapping[str, str] | None
    out: Path
    model: str | None = None
    checkpoint: Path | None = None
    split: str = "test"
    class_map: Path | None = None
    limit: int | None = None
    # Listed samples of the default dataset: a shipped subset name or a file of names or
    # indices (robench.data.subset); default: the suite's `subset`, else every sample.
    subset: str | None = None
    # Restrict the default dataset's label space: a shipped list ("imagenet-a") or a file of
    # ImageNet wnids (timm's --valid-labels); only their images, argmax among their logits.
    classes: str | None = None
    batch_size: int = 64
    seed: int = 0
    device: str = "cpu"
    workers: int = 0
    # An unreadable image: "stop" the run (exit 2), or "skip" it (read every sample once
    # first, leave the unreadable ones out of every perturbation, list them in the report).
    bad_images: str = "stop"
    imports: tuple[str, ...] = ()
    overrides: ModelSpec = field(default_factory=ModelSpec)
    ema: bool = False
    trust_checkpoint: bool = False
    trust_remote_code: bool = False  # run code a transformers model ships (auto_map)
    resume: bool = False
    overwrite: bool = False
    allow_random_weights: bool = False  # evaluate a model that has no checkpoint
    sanity: bool = False  # run the sanity battery too (also on when the suite says so)
    sanity_eps: float | None = None  # battery budget; default: suite's, else its largest eps
    # How hard the battery tries: "auto" (at most 3x the suite's cost), "full" or "quick"
    # (docs/sanity.md); None: the suite's `sanity_budget`, else "auto".
    sanity_budget: str | None = None
    # The task's data options over the suite's (language modelling: target_length, context).
    data_options: dict[str, Any] = field(default_factory=dict)
    # Opt-in speed modes: --amp (clean and corruption scoring), --channels-last, --compile.
    speed: SpeedOptions = field(default_factory=SpeedOptions)
    command: list[str] = field(default_factory=list)

    @property
    def datasets(self) -> dict[str, str]:
        """The named datasets, in order; a single dataset is named "default"."""
        if self.data is None:
            raise ConfigError("no dataset was given; pass --data PATH (or NAME=PATH).")
        if isinstance(self.data, str):
            return {DEFAULT_DATASET: self.data}
        if not self.data:
            raise ConfigError("no dataset was given; pass --data PATH (or NAME=PATH).")
        # An unnamed dataset is the default wherever it was given (`--data clean=VAL --data C`).
        named = dict(self.data)
        if DEFAULT_DATASET in named:
            named = {DEFAULT_DATASET: named.pop(DEFAULT_DATASET), **named}
        return named


def _preprocessing_info(prep: Preprocessing) -> dict[str, Any]:
    """The report's (and the resume fingerprint's) preprocessing; the resize mode and backend
    appear only when they differ from timm's convention, so older runs still resume."""
    info: dict[str, Any] = {
        "input_size": list(prep.input_size),
        "interpolation": prep.interpolation,
        "crop_pct": prep.crop_pct,
    }
    if prep.resize_mode != "shorter":
        info["resize_mode"] = prep.resize_mode
    if prep.backend != "pil":
        info["backend"] = prep.backend
    return info


def _single_weight_sha256(loaded: LoadedModel) -> str | None:
    """A source's one weight file's hash, which is what checkpoint_sha256 means (gate and
    the HTML page show it); None for sharded weights (model.source lists every file)."""
    weights = loaded.origin.weights if loaded.origin is not None else {}
    return next(iter(weights.values())) if len(weights) == 1 else None


def _model_info(loaded: LoadedModel, randomized: bool) -> ModelInfo:
    spec = loaded.spec
    ckpt = loaded.checkpoint
    prep = loaded.preprocessing
    extensions = report_sections(loaded.model)
    if loaded.vocabulary is not None:
        extensions["vocabulary"] = {
            "size": len(loaded.vocabulary),
            "sha256": loaded.vocabulary.sha256,
            "source": "checkpoint metadata",
        }
    return ModelInfo(
        name=loaded.name,
        architecture=loaded.architecture,
        model_kwargs=loaded.model_kwargs,
        card=str(loaded.card_path) if loaded.card_path else None,
        checkpoint=str(ckpt.path) if ckpt else None,
        checkpoint_sha256=ckpt.sha256 if ckpt else _single_weight_sha256(loaded),
        checkpoint_layout=ckpt.layout if ckpt else None,
        n_parameters=sum(p.numel() for p in loaded.model.parameters()),
        normalization={"mean": list(spec.mean or ()), "std": list(spec.std or ())},
        preprocessing=_preprocessing_info(prep) if prep is not None else {},
        config_sources={k: v for k, v in loaded.sources.items() if k != "architecture"},
        task=loaded.task,
        source=loaded.origin.report_section() if loaded.origin is not None else None,
        extensions=extensions,
        randomized=randomized,
    )


def _result_params(job: Job, summary: dict[str, Any] | None) -> dict[str, Any]:
    """The report's parameters of a job's result; an unbounded perturbation also says where
    its inputs came from (computed on the fly, or read from a pre-rendered set), and a
    dataset perturbation what it did (`summary`, e.g. Word Swap's realised rate)."""
    params = job.planned.report_params()
    if job.planned.params.unbounded:
        params["source"] = "rendered" if job.prerendered else "on-the-fly"
        if job.prerendered:
            params.pop("implementation", None)  # nothing was computed
    if summary:
        params["realised"] = summary
    return params


def _results(
    loaded_suite: LoadedSuite,
    task: Task,
    jobs: list[tuple[str, Job]],
    records_by_name: dict[str, SampleRecords],
    times: RunTimes,
) -> tuple[list[PerturbationResult], dict[str, SampleResults]]:
    """Metrics and per-sample columns of every result, computed from the task's records."""
    results = []
    samples: dict[str, SampleResults] = {}
    metrics = [METRICS.get(name) for name in loaded_suite.suite.metrics]
    for dataset, job in jobs:
        planned = job.planned
        records = records_by_name.get(planned.label, {})
        indices = sorted(records)
        ordered = [records[i] for i in indices]
        outputs = list(map(task.outputs, ordered))
        columns = {name: [row[name] for row in outputs] for name in outputs[0]} if outputs else {}
        values: dict[str, MetricValue] = {}
        for metric in metrics:
            per_sample = list(map(metric.per_sample, ordered))
            value, ci95 = metric.summarize(per_sample)
            values[metric.name] = MetricValue(
                value=value, ci95=ci95, higher_is_better=metric.higher_is_better
            )
            columns[metric.name] = per_sample
        results.append(
            PerturbationResult(
                name=planned.label,
                kind=planned.kind,
                params=_result_params(job, times.summaries.get(planned.label)),
                dataset=dataset,
                n_samples=len(indices),
                metrics=values,
                wall_time_s=round(times.seconds.get(planned.label, 0.0), 3),
            )
        )
        # A dataset's sample list is that of its result with the most samples (max_samples
        # keeps the first n of the sorted indices, so every other result is a prefix).
        known = samples.get(dataset)
        if known is None or len(indices) > len(known.indices):
            targets = list(map(task.target, ordered))
            known = SampleResults(
                indices=indices, targets=targets, values=known.values if known else {}
            )
            samples[dataset] = known
        known.values[planned.label] = columns
    return results, samples


DEFAULT_SANITY_EPS = 8 / 255


def _diagnostics(
    loaded_suite: LoadedSuite,
    task: Task,
    model: nn.Module,
    dataset: Dataset,
    indices: list[int],
    device: torch.device,
    report_path: Path,
    model_name: str,
) -> list[DiagnosticResult]:
    if not loaded_suite.diagnostics:
        return []
    chosen = indices[: loaded_suite.suite.diagnostics_samples]
    images, _ = task.load_batch(dataset, chosen, device)
    figures = report_path.with_name(report_path.name.removesuffix(".json") + "_figures")
    results = []
    for planned in loaded_suite.diagnostics:
        logger.info("diagnostic %s on %d samples", planned.label, len(chosen))
        output = planned.diagnostic.run(
            model, images, out_dir=figures / planned.label, label=model_name
        )
        results.append(
            DiagnosticResult(
                name=planned.label,
                kind=planned.kind,
                params=planned.report_params(),
                n_samples=len(chosen),
                values=output.values,
                files=[str(Path(f).relative_to(report_path.parent)) for f in output.files],
            )
        )
    return results


def _sanity(
    request: EvalRequest,
    loaded_suite: LoadedSuite,
    task: Task,
    model: nn.Module,
    dataset: Dataset,
    indices: list[int],
    device: torch.device,
    progress: Progress | None = None,
    suite_results: Sequence[PerturbationResult] = (),
    randomized: bool = False,
) -> tuple[list[SanityResult], SanityBudgetInfo | None]:
    """The battery's results and its budget, chosen by `--sanity-budget` from the cost of
    `suite_results` (`randomized`: the model check found the model randomized)."""
    suite = loaded_suite.suite
    if not (request.sanity or suite.sanity):
        return [], None
    from robench.evaluation.sanity import run_sanity
    from robench.evaluation.sanity_budget import (
        EOT,
        budget_info,
        check_mode,
        choose_budget,
        suite_cost,
    )
    from robench.perturbations.threat_models import NORMS

    mode = check_mode(request.sanity_budget or suite.sanity_budget or "auto")
    available = indices[: suite.sanity_samples]
    if not available:
        return [], None

    # The battery's threat model: L2 when every bounded entry is L2, else L-inf; its budget is
    # the largest eps of that norm (an L2 eps never becomes an L-inf budget).
    budgets: dict[str, list[float]] = {}  # norm -> the eps of the suite's bounded entries
    for planned in loaded_suite.plan:
        if planned.eps is not None and planned.norm is not None:
            budgets.setdefault(planned.norm, []).append(planned.eps)
    norm = "l2" if set(budgets) == {"l2"} else "linf"
    default_eps = {"linf": DEFAULT_SANITY_EPS, "l2": 0.5}[norm]  # 0.5: RobustBench's L2
    eps = request.sanity_eps or suite.sanity_eps or max(budgets.get(norm, [0.0])) or default_eps
    classes = len(getattr(dataset, "classes", ())) or 10
    suite_passes = suite_cost(
        loaded_suite.plan, {r.name: r.n_samples for r in suite_results}, classes
    )
    flags: dict[str, Any] = {  # what the battery's cost depends on
        "norm": norm,
        "adaptive": supports_adaptive_attack(model),
        "randomized": randomized,
        "eps": eps,
    }
    budget = choose_budget(
        mode, suite_passes=suite_passes, available_samples=len(available), **flags
    )
    started = time.perf_counter()
    results = run_sanity(
        model,
        dataset,
        available,
        eps=eps,
        seed=request.seed,
        batch_size=request.batch_size,
        device=device,
        budget=budget,
        on_step=lambda name: logger.info("sanity battery: %s", name),
        task=task,
        norm=norm,
        progress=progress,
        randomized=randomized if mode == "auto" else None,  # auto: only what it planned
    )
    # full and quick run EOT whenever the battery finds the model randomized: count it then.
    flags["randomized"] = randomized or any(r.name == EOT for r in results)
    info = budget_info(
        budget,
        mode,
        suite_passes=suite_passes,
        wall_time_s=time.perf_counter() - started,
        **flags,
    )
    logger.info(
        "sanity battery: %s, budget %s: %d samples, about %d model passes (the suite: %d)",
        NORMS[norm].budget_display(eps),
        mode,
        info.samples,
        info.battery_passes,
        suite_passes,
    )
    for result in results:
        if result.status == "warn":
            logger.warning("sanity: %s: %s", result.name, result.detail)
    return results, info


def _model_task(suite_task: str, loaded: LoadedModel) -> str:
    """The task `loaded` is evaluated on: its own, or the suite's image task for an image
    network that names none (the task's `check_data` then checks its outputs)."""
    if not loaded.task_declared and TASKS.get(suite_task).inputs == "images":
        return suite_task
    return loaded.task


def _check_tasks(suite_task: str, model_task: str, model_name: str) -> None:
    if suite_task != model_task:
        raise ConfigError(
            f"the suite is for {suite_task} models but {model_name} is a model for "
            f"{model_task}; pick a suite for {model_task} (`robench list suites`)."
        )


def _open_datasets(
    request: EvalRequest,
    loaded: LoadedModel,
    task: Task,
    loaded_suite: LoadedSuite,
    options: dict[str, Any],
) -> dict[str, LabeledImages]:
    opened = {}
    declared = loaded_suite.suite.datasets
    for name, path in request.datasets.items():
        layout = declared[name].layout if name in declared else None
        dataset = task.open_data(
            path,
            loaded,
            split=request.split,
            layout=layout,
            class_map=request.class_map,
            options=options,
        )
        if dataset.task != task.name:
            raise DataError(
                f"dataset {name!r} ({path}) is {dataset.task} data but the suite and model are "
                f"{task.name}; pass {task.name} data with --data."
            )
        opened[name] = dataset
    return opened


def _data_options(request: EvalRequest, loaded_suite: LoadedSuite, task: Task) -> dict[str, Any]:
    """The task's data options: flags over the suite's over the task's defaults."""
    given = {**loaded_suite.suite.data_options, **request.data_options}
    unknown = sorted(set(given) - set(task.data_options))
    if unknown:
        known = ", ".join(task.data_options) or "none"
        raise ConfigError(
            f"data option(s) {', '.join(unknown)} do not apply to {task.name} data (its "
            f"options: {known})."
        )
    return {**task.data_options, **given}


def _check_dataset_names(loaded_suite: LoadedSuite, names: list[str]) -> None:
    declared = loaded_suite.suite.datasets
    optional = {name for name, d in declared.items() if d.optional}
    # An unnamed --data is the suite's main dataset, which every entry that names no dataset
    # runs on; only a suite whose entries all name theirs has no use for it.
    has_main = any(planned.dataset is None for planned in loaded_suite.plan)
    main_given = DEFAULT_DATASET in names and has_main
    named = set(names) & set(declared)
    if declared and not named and not main_given and DEFAULT_DATASET not in declared:
        listed = ", ".join(f"{n}=PATH" for n in declared)
        raise ConfigError(
            f"suite {loaded_suite.suite.name!r} runs on named datasets; pass them as --data "
            f"NAME=PATH ({listed})."
        )
    for planned in loaded_suite.plan:
        if planned.dataset is not None and planned.dataset not in names:
            if planned.dataset in optional:
                continue
            raise ConfigError(
                f"suite entry {planned.label!r} runs on dataset {planned.dataset!r}, which was "
                f"not given; pass --data {planned.dataset}=PATH (given: {', '.join(names)})."
            )


def _check_limit(limit: int | None, available: int, path: str) -> None:
    """A --limit beyond the default dataset would silently evaluate fewer samples."""
    if limit is not None and limit > available:
        raise ConfigError(
            f"--limit {limit} exceeds the {available} samples of {path}; pass --limit "
            f"{available} or less, or leave --limit out to evaluate every sample."
        )


def _sample_indices(dataset: LabeledImages, subset: str | None, limit: int | None, seed: int):
    """The evaluated indices: the subset's (or all), then a seeded `limit` of them."""
    if subset is None:
        return select_indices(len(dataset), limit, seed)
    names = getattr(dataset, "relative_paths", None)
    listed = resolve_subset(subset, len(dataset), names() if names else None)
    if limit is not None and limit > len(listed):  # would silently evaluate fewer samples
        raise ConfigError(
            f"--limit {limit} exceeds the {len(listed)} samples of subset {subset}; pass "
            f"--limit {len(listed)} or less, or leave --limit out to evaluate the whole subset."
        )
    return [listed[i] for i in select_indices(len(listed), limit, seed)]


def _leave_out_unreadable(
    data: dict[str, EvalData], workers: int, progress: Progress | None
) -> tuple[dict[str, EvalData], dict[str, list[Unreadable]]]:
    """`--bad-images skip`: the data without its unreadable samples, and those samples."""
    kept, skipped = {}, {}
    for name, source in data.items():
        found = find_unreadable(
            source.dataset,
            source.indices,
            workers=workers,
            progress=progress,
            name=f"reading {name} images",
        )
        bad = {u.index for u in found}
        for unreadable in found:
            logger.warning("left out: %s", unreadable.reason)
        if len(bad) == len(source.indices):
            raise DataError(
                f"none of the {len(bad)} chosen samples of dataset {name!r} can be read (the "
                f"first: {found[0].reason}); check the path and the files."
            )
        kept[name] = replace(source, indices=[i for i in source.indices if i not in bad])
        skipped[name] = found
    return kept, skipped


def _label_space_info(dataset: LabeledImages) -> LabelSpaceInfo | None:
    space = dataset.label_space
    if space is None:
        return None
    return LabelSpaceInfo(
        name=space.name,
        classes=len(space.wnids),
        sha256=space.sha256,
        source=space.source,
        protocol=(
            f"the model's logits are restricted to the {len(space.wnids)} listed classes and "
            "the prediction is the argmax among them"
        ),
    )


def _data_info(
    dataset: LabeledImages,
    indices: list[int],
    indices_hash: str,  # indices_sha256(indices), as the run's fingerprint has it
    limit: int | None,
    subset: str | None,
    skipped: list[Unreadable],
) -> DataInfo:
    corpus = getattr(dataset, "info", None)
    return DataInfo(
        corpus=corpus() if callable(corpus) else None,
        label_space=_label_space_info(dataset),
        preprocessing_note=dataset.preprocessing_note,
        path=str(dataset.root),
        kind=dataset.kind,
        split=dataset.split,
        n_total=len(dataset),
        n_samples=len(indices),
        limit=limit,
        indices_sha256=indices_hash,
        classes=len(dataset.classes),
        class_index_note=dataset.class_index_note,
        subset=subset,
        skipped=[SkippedSample(index=u.index, reason=u.reason) for u in skipped],
    )


def _with_label_spaces(
    datasets: dict[str, LabeledImages],
    loaded_suite: LoadedSuite,
    default: str,
    classes: str | None,
) -> dict[str, LabeledImages]:
    """The datasets with `--classes` applied to the default one, plus one view per
    (dataset, classes) pair that suite entries ask for (keyed `NAME[classes]`)."""
    from robench.data.label_space import read_label_space, restrict_to_label_space

    out = dict(datasets)
    if classes is not None:
        out[default] = restrict_to_label_space(out[default], read_label_space(classes))
    for planned in loaded_suite.plan:
        key = data_key(planned, default)
        base = planned.dataset or default
        if planned.classes is not None and key not in out and base in datasets:
            space = read_label_space(planned.classes)
            out[key] = restrict_to_label_space(datasets[base], space)
    return out


def _input_paths(request: EvalRequest, loaded_suite: LoadedSuite) -> dict[str, Path]:
    """Files and folders the run reads, by the flag that names them."""
    given: list[tuple[str, str | Path | None]] = [
        ("--checkpoint", request.checkpoint),
        ("--suite", loaded_suite.path),
        ("the model card", request.model),
        ("--class-map", request.class_map),
        ("--subset", request.subset),
        ("--classes", request.classes),
        *(("--import", target) for target in request.imports),
        *((f"--data {name}", path) for name, path in request.datasets.items()),
    ]
    return {flag: Path(value) for flag, value in given if value and Path(value).exists()}


def _check_output(request: EvalRequest, loaded_suite: LoadedSuite) -> None:
    """Refuse, before anything is written, a report path that would overwrite or land in an
    input, or that cannot be written."""
    report = request.out.resolve()
    written = {report, samples_path_for(report).resolve()}
    for flag, path in _input_paths(request, loaded_suite).items():
        target = path.resolve()
        if target in written or (target.is_dir() and target in report.parents):
            where = "is" if target in written else "is inside"
            raise ConfigError(
                f"--out {request.out} {where} {flag} {path}, which the run reads; writing the "
                "report there would destroy it; pass another --out."
            )
    check_writable(request.out)


def _file_list_sha256(root: Path, dataset: LabeledImages) -> str:
    """A cheap fingerprint of a dataset's content: its file names (and sizes where there is
    no file list), so another folder or a changed one is not taken for the same data."""
    names = getattr(dataset, "relative_paths", None)
    listed = names() if callable(names) else None  # None too for array data (CIFAR-10-C)
    if listed is not None:
        listing = sorted(str(name) for name in listed)
    elif root.is_dir():
        listing = sorted(
            f"{entry.name}:{entry.stat().st_size}" for entry in root.iterdir() if entry.is_file()
        )
    elif root.is_file():
        listing = [f"{root.name}:{root.stat().st_size}"]
    else:
        listing = []
    return hashlib.sha256("\n".join(listing).encode()).hexdigest()


def _input_fingerprint(
    request: EvalRequest, loaded: LoadedModel, datasets: Mapping[str, LabeledImages]
) -> dict[str, Any]:
    """What else decides a sample's record: preprocessing, the data, the sample count.

    A store is resumed only when all of it matches, so changing --std or pointing --data at
    another folder of the same size starts a new run instead of merging two.
    """
    prep = loaded.preprocessing
    data = {}
    for name, dataset in datasets.items():
        root = Path(dataset.root)
        data[name] = {
            "path": str(root.resolve()),
            "kind": dataset.kind,
            "split": dataset.split,
            "n_total": len(dataset),
            "files_sha256": _file_list_sha256(root, dataset),
        }
    return {
        "normalization": {"mean": list(loaded.spec.mean or ()), "std": list(loaded.spec.std or ())},
        "preprocessing": _preprocessing_info(prep) if prep is not None else None,
        "model_kwargs": loaded.model_kwargs,
        "data": data,
        "split": request.split,
        "limit": request.limit,
        "subset": request.subset,
    }


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


def evaluate(request: EvalRequest, progress: Progress | None = None) -> Report:
    """Run the request's suite on its model and data; write and return the report."""
    started = time.perf_counter()
    if request.batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1, got {request.batch_size}.")
    if request.limit is not None and request.limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {request.limit}.")
    check_bad_image_policy(request.bad_images)
    if request.workers < 0:
        raise ConfigError(
            f"--workers must be 0 (load data in the main process) or more, got {request.workers}."
        )
    if request.resume and request.overwrite:
        raise ConfigError(
            "--resume keeps an interrupted run's results and --overwrite discards them; pass "
            "one of the two."
        )
    # Plugins first: a suite may use a perturbation kind, metric, task or dataset layout
    # that one registers (and each --import runs once, so load_model gets none).
    load_plugins(request.imports)
    loaded_suite = load_suite(request.suite)
    if request.data is None:
        request = replace(request, data=load_task(loaded_suite.suite.task).default_data)
    _check_output(request, loaded_suite)
    _check_dataset_names(loaded_suite, list(request.datasets))
    dist = DistributedContext.from_env(request.device)  # torchrun: shard batches over ranks
    device = dist.device
    seed_everything(request.seed)  # a model without a checkpoint is initialised reproducibly
    loaded = load_model(
        request.model,
        checkpoint=request.checkpoint,
        overrides=request.overrides,
        ema=request.ema,
        trust_checkpoint=request.trust_checkpoint,
        trust_remote_code=request.trust_remote_code,
        device=device,
    )
    if not loaded.has_weights and not request.allow_random_weights:
        raise ConfigError(
            f"{loaded.name} has no checkpoint, so its weights are random and its numbers "
            "would mean nothing; pass --checkpoint FILE (or a model card with weights), or "
            "--allow-random-weights to evaluate random weights on purpose."
        )
    loaded = replace(loaded, task=_model_task(loaded_suite.suite.task, loaded))
    _check_tasks(loaded_suite.suite.task, loaded.task, loaded.name)
    task = load_task(loaded_suite.suite.task)
    if (request.sanity or loaded_suite.suite.sanity) and not task.sanity_battery:
        raise ConfigError(  # before the run, not after it
            f"the sanity battery checks gradient attacks on image classifiers; it does not "
            f"apply to {task.name} models. Drop --sanity (or `sanity` from the suite)."
        )
    data_options = _data_options(request, loaded_suite, task)
    opened = _open_datasets(request, loaded, task, loaded_suite, data_options)
    default_name = next(iter(opened))
    datasets = _with_label_spaces(opened, loaded_suite, default_name, request.classes)
    # A listed subset restricts the default dataset only.
    subsets = {default_name: request.subset or loaded_suite.suite.subset}
    _check_limit(request.limit, len(datasets[default_name]), request.datasets[default_name])
    data = {
        name: EvalData(
            dataset,
            _sample_indices(dataset, subsets.get(name), request.limit, request.seed),
            dataset.output_classes,
        )
        for name, dataset in datasets.items()
    }
    skipped: dict[str, list[Unreadable]] = {}
    if request.bad_images == "skip":
        shown = progress if dist.is_main else None
        data, skipped = _leave_out_unreadable(data, request.workers, shown)
    default = data[default_name]
    first_batches = {
        name: task.load_batch(
            source.dataset, list(source.indices[: min(request.batch_size, 64)]), device
        )
        for name, source in data.items()
    }
    scored_default = restrict_outputs(loaded.model, default.output_classes)
    notes = []
    for name, source in data.items():  # labels must mean the model's classes before scoring
        inputs, _ = first_batches[name]
        scored = restrict_outputs(loaded.model, source.output_classes)
        check_data = functools.partial(
            task.check_data, source.dataset, scored, inputs, mapped=request.class_map is not None
        )
        _first_forward(loaded, check_data)
        notes.append(task.adaptation_note(source.dataset, loaded.preprocessing))
    # Input gradients matter to attacks (and the sanity battery) only: a clean or corruption
    # suite does not pay for a backward pass.
    suite_attacks = any(p.eps is not None for p in loaded_suite.plan)
    gradients = request.sanity or loaded_suite.suite.sanity or suite_attacks
    checks = _first_forward(
        loaded,
        lambda: task.check_model(scored_default, *first_batches[default_name], gradients=gradients),
    )
    warnings = list(checks.warnings)
    for note in notes:
        if note and note not in warnings:
            warnings.append(note)
    jobs, missing = resolve_jobs(loaded_suite.plan, data, loaded_suite.suite.datasets, default_name)
    for gone in missing:
        logger.warning("not evaluated: %s: %s", gone.name, gone.reason)
    if not loaded.has_weights:
        warnings.insert(0, f"no checkpoint: {loaded.architecture} has random weights.")
    for warning in warnings:
        logger.warning(warning)

    speed = replace(request.speed, amp_attacks=loaded_suite.suite.amp_attacks)
    if speed.attacks_in_amp and suite_attacks:
        warnings.append(
            f"attacks ran in {speed.amp} (--amp with the suite's amp_attacks): reduced-precision "
            "gradients can weaken an attack and scoring moves borderline samples, so robust "
            "accuracy may read higher than in float32."
        )
        logger.warning(warnings[-1])
    check_speed(speed, device, first_batches[default_name][0])
    run_model = prepare_model(loaded.model, speed, first_batches[default_name][0])
    env = capture_environment(device)
    indices_hashes = {name: indices_sha256(d.indices) for name, d in data.items()}
    fingerprint = {
        "checkpoint_sha256": loaded.weights_sha256,
        "architecture": loaded.architecture,
        "suite_sha256": loaded_suite.sha256,
        "indices_sha256": indices_hashes,
        "seed": request.seed,
        "batch_size": request.batch_size,
        "device": device.type,
        "robench_version": __version__,
    }
    fingerprint.update(_input_fingerprint(request, loaded, opened))
    if request.classes is not None:  # only when given, so older stores still resume
        fingerprint["classes"] = request.classes
    if data_options:  # windows of a text corpus change what a sample is
        fingerprint["data_options"] = data_options
    if speed.amp is not None:  # changes numbers; channels-last and compile do not
        fingerprint["amp"] = speed.amp
    samples_path = samples_path_for(request.out, dist.rank if dist.enabled else None)
    check_fresh_start(samples_path, resume=request.resume, overwrite=request.overwrite)
    store = SampleStore(samples_path, fingerprint, resume=request.resume)
    bad_input = False  # a fresh run stopped by bad input (a corrupt image) leaves no file
    try:
        times = run_plan(
            run_model,
            task,
            [job for _, job in jobs],
            store,
            batch_size=request.batch_size,
            seed=request.seed,
            device=device,
            workers=request.workers,
            progress=progress if dist.is_main else None,
            shard=(dist.rank, dist.world_size),
            speed=speed,
        )
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
    records = store.records
    if dist.enabled:  # every rank reads all shards; rank 0 alone writes the report
        dist.barrier()
        ranks = range(dist.world_size)
        records = merge_records([samples_path_for(request.out, r) for r in ranks], fingerprint)
        # A rank that ran out of GPU memory split its batches: the report gives the smallest
        # size any rank ran on, and where that rank first split.
        sizes = dist.gather((times.batch_size_used, times.batch_size_note))
        times.batch_size_used, times.batch_size_note = min(sizes, key=lambda size: size[0])

    results, samples = _results(loaded_suite, task, jobs, records, times)
    result_checks = check_attack_order(results)
    for check in result_checks:
        if check.status == "warn":
            logger.warning("check %s: %s", check.name, check.detail)
            warnings.append(check.detail)
    sanity: list[SanityResult] = []
    sanity_budget: SanityBudgetInfo | None = None
    diagnostics: list[DiagnosticResult] = []
    if dist.is_main:
        default_indices = list(default.indices)
        sanity, sanity_budget = _sanity(
            request,
            loaded_suite,
            task,
            scored_default,
            default.dataset,
            default_indices,
            device,
            progress=progress,
            suite_results=results,
            randomized=checks.randomized,
        )
        diagnostics = _diagnostics(
            loaded_suite,
            task,
            scored_default,
            default.dataset,
            default_indices,
            device,
            request.out,
            loaded.name,
        )
    report = Report(
        robench_version=__version__,
        created_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=request.command,
        task=task.name,
        environment=env,
        model=_model_info(loaded, checks.randomized),
        suite=SuiteInfo(
            name=loaded_suite.suite.name,
            version=loaded_suite.suite.version,
            sha256=loaded_suite.sha256,
            path=str(loaded_suite.path),
            description=loaded_suite.suite.description,
        ),
        datasets={
            name: _data_info(
                datasets[name],
                list(d.indices),
                indices_hashes[name],
                request.limit,
                subsets.get(name),
                skipped.get(name, []),
            )
            for name, d in data.items()
        },
        seed=request.seed,
        batch_size=request.batch_size,
        speed=speed.info(times.batch_size_used, times.batch_size_note),
        results=results,
        warnings=warnings,
        samples=samples,
        diagnostics=diagnostics,
        sanity=sanity,
        sanity_budget=sanity_budget,
        checks=result_checks,
        missing=missing,
        wall_time_s=round(time.perf_counter() - started, 3),
    )
    if loaded_suite.suite.aggregates:
        from robench.results.aggregates import compute_aggregates

        report.aggregates = compute_aggregates(report, loaded_suite.suite.aggregates)
        report.wall_time_s = round(time.perf_counter() - started, 3)
    if dist.is_main:
        write_report(report, request.out)
    dist.close()
    return report
