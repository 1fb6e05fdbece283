"""`evaluate`: one checkpoint x one suite x one dataset -> a validated, atomically written report.

This is the Python API behind `robench eval`. Per-sample results stream to a file beside the
report, so an interrupted evaluation resumes with `resume=True` and ends in the same report.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
from torch import nn

from robench._core.distributed import DistributedContext
from robench._core.errors import ConfigError, DataError
from robench._core.seeding import seed_everything
from robench._core.version import __version__
from robench.data import LabeledImages, open_dataset
from robench.data.subset import indices_sha256, select_indices
from robench.evaluation.environment import capture_environment
from robench.evaluation.runner import Progress, load_batch, run_plan
from robench.evaluation.sample_store import (
    SampleRecords,
    SampleStore,
    check_fresh_start,
    merge_records,
    samples_path_for,
)
from robench.evaluation.suites import LoadedSuite, load_suite
from robench.models.checks import check_model
from robench.models.loading import LoadedModel, load_model
from robench.models.spec import ModelSpec
from robench.results.checks import check_attack_order
from robench.results.metrics import METRICS
from robench.results.report import (
    DataInfo,
    DiagnosticResult,
    MetricValue,
    ModelInfo,
    PerturbationResult,
    Report,
    SampleResults,
    SanityResult,
    SuiteInfo,
    write_report,
)

logger = logging.getLogger(__name__)


@dataclass
class EvalRequest:
    """Everything `robench eval` takes; `None` means "not given" (use the next source)."""

    suite: str
    data: str
    out: Path
    model: str | None = None
    checkpoint: Path | None = None
    split: str = "test"
    class_map: Path | None = None
    limit: int | None = None
    batch_size: int = 64
    seed: int = 0
    device: str = "cpu"
    workers: int = 0
    imports: tuple[str, ...] = ()
    overrides: ModelSpec = field(default_factory=ModelSpec)
    ema: bool = False
    trust_checkpoint: bool = False
    resume: bool = False
    overwrite: bool = False
    allow_random_weights: bool = False  # evaluate a model that has no checkpoint
    sanity: bool = False  # run the sanity battery too (also on when the suite says so)
    sanity_eps: float | None = None  # battery budget; default: suite's, else its largest eps
    command: list[str] = field(default_factory=list)


def _elliptical_info(model: nn.Module) -> dict[str, Any] | None:
    from robench.models.layers import EllipticalAttention

    layers = [m for m in model.modules() if isinstance(m, EllipticalAttention)]
    if not layers:
        return None
    last = layers[-1]
    options = ("scaling", "estimator", "differentiable", "delta", "causal_estimator")
    # The first layer has no previous values and stays standard: count the layers using M.
    using_m = sum(not layer.is_first for layer in layers)
    return {"layers": using_m, **{name: getattr(last, name) for name in options}}


def _model_info(loaded: LoadedModel, randomized: bool) -> ModelInfo:
    spec = loaded.spec
    ckpt = loaded.checkpoint
    return ModelInfo(
        name=loaded.name,
        architecture=loaded.architecture,
        model_kwargs=loaded.model_kwargs,
        card=str(loaded.card_path) if loaded.card_path else None,
        checkpoint=str(ckpt.path) if ckpt else None,
        checkpoint_sha256=ckpt.sha256 if ckpt else None,
        checkpoint_layout=ckpt.layout if ckpt else None,
        n_parameters=sum(p.numel() for p in loaded.model.model.parameters()),
        normalization={"mean": list(spec.mean or ()), "std": list(spec.std or ())},
        preprocessing={
            "input_size": list(loaded.preprocessing.input_size),
            "interpolation": loaded.preprocessing.interpolation,
            "crop_pct": loaded.preprocessing.crop_pct,
        },
        config_sources={k: v for k, v in loaded.sources.items() if k != "architecture"},
        elliptical=_elliptical_info(loaded.model),
        randomized=randomized,
    )


def _results(
    loaded_suite: LoadedSuite,
    records_by_name: dict[str, SampleRecords],
    seconds: dict[str, float],
) -> tuple[list[PerturbationResult], SampleResults]:
    results = []
    base_indices: list[int] | None = None
    predictions: dict[str, list[int]] = {}
    top5: dict[str, list[bool]] = {}
    labels: list[int] = []
    in_top5 = METRICS.get("top5").per_sample
    for planned in loaded_suite.plan:
        records = records_by_name.get(planned.label, SampleRecords())
        indices = sorted(records.labels)
        metrics = {}
        for metric_name in loaded_suite.suite.metrics:
            metric = METRICS.get(metric_name)
            values = [metric.per_sample(records.labels[i], records.topk[i]) for i in indices]
            value, ci95 = metric.summarize(values)
            metrics[metric_name] = MetricValue(
                value=value, ci95=ci95, higher_is_better=metric.higher_is_better
            )
        results.append(
            PerturbationResult(
                name=planned.label,
                kind=planned.kind,
                params=planned.report_params(),
                n_samples=len(indices),
                metrics=metrics,
                wall_time_s=round(seconds.get(planned.label, 0.0), 3),
            )
        )
        if base_indices is None or len(indices) > len(base_indices):
            base_indices = indices
            labels = [records.labels[i] for i in indices]
        predictions[planned.label] = [records.topk[i][0] for i in indices]
        top5[planned.label] = [bool(in_top5(records.labels[i], records.topk[i])) for i in indices]
    samples = SampleResults(
        indices=base_indices or [], labels=labels, predictions=predictions, top5_correct=top5
    )
    return results, samples


DEFAULT_SANITY_EPS = 8 / 255


def _check_classes(n_classes: int, n_outputs: int, *, class_map: bool) -> None:
    """Label indices must mean the model's classes: equal counts, or a class map that says so."""
    if n_classes > n_outputs or (n_classes != n_outputs and not class_map):
        raise DataError(
            f"the data has {n_classes} classes but the model predicts {n_outputs}; pass a "
            f"checkpoint trained on this data, --num-classes {n_classes} with weights that "
            "match it, or a --class-map that places the data's classes among the model's."
        )


def _channel_adaptation(dataset: LabeledImages, channels: int) -> str | None:
    """The report's sentence when images are converted to the model's channel count."""
    stored = dataset.native_channels
    if stored is None or stored == channels:
        return None
    how = "replicated to 3 channels" if channels == 3 else "converted to 1 channel (luminance)"
    return (
        f"adapted input: the data's {stored}-channel images are {how} for a model that takes "
        f"{channels} channels."
    )


def _diagnostics(
    loaded_suite: LoadedSuite,
    model: nn.Module,
    dataset: LabeledImages,
    indices: list[int],
    device: torch.device,
    report_path: Path,
    model_name: str,
) -> list[DiagnosticResult]:
    if not loaded_suite.diagnostics:
        return []
    chosen = indices[: loaded_suite.suite.diagnostics_samples]
    images, _ = load_batch(dataset, chosen, device)
    figures = report_path.with_name(report_path.name.removesuffix(".json") + "_figures")
    results = []
    for planned in loaded_suite.diagnostics:
        logger.info("diagnostic %s on %d images", planned.label, len(chosen))
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
    model: nn.Module,
    dataset: LabeledImages,
    indices: list[int],
    device: torch.device,
) -> list[SanityResult]:
    suite = loaded_suite.suite
    if not (request.sanity or suite.sanity):
        return []
    from robench.evaluation.sanity import run_sanity

    eps = request.sanity_eps or suite.sanity_eps or suite.largest_eps(loaded_suite.plan)
    results = run_sanity(
        model,
        dataset,
        indices[: suite.sanity_samples],
        eps=eps or DEFAULT_SANITY_EPS,
        seed=request.seed,
        batch_size=request.batch_size,
        device=device,
        on_step=lambda name: logger.info("sanity battery: %s", name),
    )
    for result in results:
        if result.status == "warn":
            logger.warning("sanity: %s: %s", result.name, result.detail)
    return results


def evaluate(request: EvalRequest, progress: Progress | None = None) -> Report:
    """Run the request's suite on its model and data; write and return the report."""
    started = time.perf_counter()
    if request.batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1, got {request.batch_size}.")
    if request.limit is not None and request.limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {request.limit}.")
    loaded_suite = load_suite(request.suite)
    dist = DistributedContext.from_env(request.device)  # torchrun: shard batches over ranks
    device = dist.device
    seed_everything(request.seed)  # a model without a checkpoint is initialised reproducibly
    loaded = load_model(
        request.model,
        checkpoint=request.checkpoint,
        overrides=request.overrides,
        imports=request.imports,
        ema=request.ema,
        trust_checkpoint=request.trust_checkpoint,
        device=device,
    )
    if loaded.checkpoint is None and not request.allow_random_weights:
        raise ConfigError(
            f"{loaded.name} has no checkpoint, so its weights are random and its numbers "
            "would mean nothing; pass --checkpoint FILE (or a model card with weights), or "
            "--allow-random-weights to evaluate random weights on purpose."
        )
    dataset = open_dataset(
        request.data,
        preprocessing=loaded.preprocessing,
        split=request.split,
        class_map=request.class_map,
    )
    indices = select_indices(len(dataset), request.limit, request.seed)
    images, labels = load_batch(dataset, indices[: min(request.batch_size, 64)], device)
    with torch.no_grad():
        n_outputs = loaded.model(images[:1]).shape[-1]
    _check_classes(len(dataset.classes), n_outputs, class_map=request.class_map is not None)
    checks = check_model(loaded.model, images, labels)
    if loaded.checkpoint is None:
        checks.warnings.insert(0, f"no checkpoint: {loaded.architecture} has random weights.")
    adaptation = _channel_adaptation(dataset, loaded.preprocessing.channels)
    if adaptation:
        checks.warnings.append(adaptation)
    for warning in checks.warnings:
        logger.warning(warning)

    env = capture_environment(device)
    fingerprint = {
        "checkpoint_sha256": loaded.checkpoint.sha256 if loaded.checkpoint else None,
        "architecture": loaded.architecture,
        "suite_sha256": loaded_suite.sha256,
        "indices_sha256": indices_sha256(indices),
        "seed": request.seed,
        "batch_size": request.batch_size,
        "device": device.type,
        "robench_version": __version__,
    }
    samples_path = samples_path_for(request.out, dist.rank if dist.enabled else None)
    check_fresh_start(samples_path, resume=request.resume, overwrite=request.overwrite)
    store = SampleStore(samples_path, fingerprint, resume=request.resume)
    try:
        times = run_plan(
            loaded.model,
            dataset,
            indices,
            loaded_suite.plan,
            store,
            batch_size=request.batch_size,
            seed=request.seed,
            device=device,
            workers=request.workers,
            progress=progress if dist.is_main else None,
            shard=(dist.rank, dist.world_size),
        )
        store.mark_complete()
    finally:
        store.close()
    records = store.records
    if dist.enabled:  # every rank reads all shards; rank 0 alone writes the report
        dist.barrier()
        ranks = range(dist.world_size)
        records = merge_records([samples_path_for(request.out, r) for r in ranks], fingerprint)

    results, samples = _results(loaded_suite, records, times.seconds)
    result_checks = check_attack_order(results)
    for check in result_checks:
        if check.status == "warn":
            logger.warning("check %s: %s", check.name, check.detail)
            checks.warnings.append(check.detail)
    sanity: list[SanityResult] = []
    diagnostics: list[DiagnosticResult] = []
    if dist.is_main:
        sanity = _sanity(request, loaded_suite, loaded.model, dataset, indices, device)
        diagnostics = _diagnostics(
            loaded_suite, loaded.model, dataset, indices, device, request.out, loaded.name
        )
    report = Report(
        robench_version=__version__,
        created_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=request.command,
        environment=env,
        model=_model_info(loaded, checks.randomized),
        suite=SuiteInfo(
            name=loaded_suite.suite.name,
            version=loaded_suite.suite.version,
            sha256=loaded_suite.sha256,
            path=str(loaded_suite.path),
            description=loaded_suite.suite.description,
        ),
        data=DataInfo(
            path=str(dataset.root),
            kind=dataset.kind,
            split=dataset.split,
            n_total=len(dataset),
            n_samples=len(indices),
            limit=request.limit,
            indices_sha256=indices_sha256(indices),
            classes=len(dataset.classes),
            class_index_note=dataset.class_index_note,
        ),
        seed=request.seed,
        batch_size=request.batch_size,
        results=results,
        warnings=checks.warnings,
        samples=samples,
        diagnostics=diagnostics,
        sanity=sanity,
        checks=result_checks,
        wall_time_s=round(time.perf_counter() - started, 3),
    )
    if dist.is_main:
        write_report(report, request.out)
    dist.close()
    return report
