"""Report assembly: the model, result, diagnostic and suite sections of a run's report,
computed from what the run found and the task's per-sample records."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset

from robench._core.model_hooks import report_sections
from robench._core.plugins import call_plugin
from robench.data.preprocessing import Preprocessing
from robench.evaluation.cost import result_cost
from robench.evaluation.runner import Job, RunTimes
from robench.evaluation.store.sample_store import SampleRecords
from robench.evaluation.suites import LoadedSuite
from robench.models.loading import LoadedModel
from robench.results.report.schema import (
    DiagnosticResult,
    MetricValue,
    ModelInfo,
    PerturbationResult,
    SampleResults,
    SuiteInfo,
)
from robench.results.stats.metrics import METRICS
from robench.tasks.base import Task

logger = logging.getLogger(__name__)


def preprocessing_info(prep: Preprocessing) -> dict[str, Any]:
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


def model_info(loaded: LoadedModel, randomized: bool) -> ModelInfo:
    spec, ckpt, prep = loaded.spec, loaded.checkpoint, loaded.preprocessing
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
        preprocessing=preprocessing_info(prep) if prep is not None else {},
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
    if job.surrogate is not None:  # a transfer attack: where its images were crafted
        params["surrogate"] = job.surrogate.info
    if job.planned.params.unbounded:
        params["source"] = "rendered" if job.prerendered else "on-the-fly"
        if job.prerendered:
            params.pop("implementation", None)  # nothing was computed
    if summary:
        params["realised"] = summary
    return params


def results(
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
        # What the attack found per sample (minimal norms, first successful iterations).
        for name in planned.params.columns:
            if any(name in row for row in ordered):
                columns[name] = [row.get(name) for row in ordered]
        values: dict[str, MetricValue] = {}
        params = _result_params(job, times.summaries.get(planned.label))
        # A metric with points (certified accuracy at each of `radii`) is one per point.
        for metric in (member for m in metrics for member in m.expand(params)):
            if metric.requires and any(metric.requires not in row for row in ordered):
                # e.g. an attack's metric on the clean result, or a calibration metric on
                # records of an older sample store resumed (they lack the scalars)
                continue
            per_sample: list[Any] = call_plugin(
                f"metric {metric.name!r}", list, map(metric.per_sample, ordered)
            )
            # Pairs (ECE's [confidence, correct], a ratio's terms) as lists, as JSON reads
            # them back: a report equals itself re-read.
            columns[metric.name] = [list(v) if isinstance(v, tuple) else v for v in per_sample]
            value, ci95 = metric.summarize(per_sample)
            if math.isnan(value):
                continue  # no sample defines it (a perturbed-word share without a success)
            if any(map(math.isnan, ci95)):
                ci95 = (value, value)  # a single defining sample: no spread to resample
            values[metric.name] = MetricValue(
                value=value, ci95=ci95, higher_is_better=metric.higher_is_better
            )
        results.append(
            PerturbationResult(
                name=planned.label,
                kind=planned.kind,
                params=params,
                dataset=dataset,
                n_samples=len(indices),
                metrics=values,
                wall_time_s=round(times.seconds.get(planned.label, 0.0), 3),
                cost=result_cost(times.passes.get(planned.label), ordered),
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


def diagnostics(
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
            model, images, out_dir=figures / planned.label, title=model_name
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


def suite_info(loaded_suite: LoadedSuite) -> SuiteInfo:
    suite = loaded_suite.suite
    return SuiteInfo(
        name=suite.name,
        version=suite.version,
        sha256=loaded_suite.sha256,
        path=str(loaded_suite.path),
        description=suite.description,
    )
