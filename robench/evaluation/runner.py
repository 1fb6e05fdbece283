"""Suite x model x datasets -> per-sample records: batching, seeding, checks and resume.

For every job (a planned perturbation and the data it runs on) the runner feeds batches of
the data to the perturbation, checks what comes back (its threat model's ball, [0, 1],
finite), and has the task score the model on it into per-sample records appended to the
sample store. Metrics are always computed from that re-run, never from an attack's own
bookkeeping.

Four ways an input gets perturbed: a batch perturbation (attacks) runs on each loaded batch;
a sample perturbation (corruptions) runs while loading, in DataLoader workers, seeded per
sample; a dataset perturbation (Word Swap) rewrites the data once before batching; pre-rendered
data (an ImageNet-C folder) is already perturbed. The last three are only checked (by the task).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch.utils.data import Dataset

from robench._core.batching import batch_indices
from robench._core.model_hooks import adaptive_attack
from robench._core.seeding import derive_seed, seed_everything
from robench.evaluation.perturbed_samples import PerturbedSamples
from robench.evaluation.sample_store import SampleStore
from robench.evaluation.suites import PlannedPerturbation
from robench.models.restricted import restrict_outputs
from robench.perturbations.base import DatasetPerturbation, SamplePerturbation
from robench.tasks.base import Columns, Task

logger = logging.getLogger(__name__)


class Progress(Protocol):
    """What the runner tells whoever displays progress (the CLI uses rich)."""

    def start(self, name: str, total: int, done: int) -> None: ...

    def advance(self, n: int) -> None: ...

    def finish(self) -> None: ...


class _NoProgress:
    def start(self, name: str, total: int, done: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        pass


@dataclass
class RunTimes:
    """Wall time spent per perturbation in this process (resumed parts count 0), and what
    each dataset perturbation reported doing (its data's `perturbation_summary`)."""

    seconds: dict[str, float] = field(default_factory=dict)
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class EvalData:
    """One named dataset of an evaluation and the sample indices chosen from it."""

    dataset: Dataset
    indices: Sequence[int]
    # The model outputs its labels 0..K-1 stand for (ImageNet-A/R, a `classes` list): logits
    # are restricted to these before scoring and attacking. None: labels are model outputs.
    output_classes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Job:
    """A planned perturbation and the data it runs on."""

    planned: PlannedPerturbation
    data: EvalData
    # The data is already perturbed (a pre-rendered corruption): check it, do not perturb it.
    prerendered: bool = False


def run_plan(
    model: torch.nn.Module,
    task: Task,
    jobs: Sequence[Job],
    store: SampleStore,
    *,
    batch_size: int,
    seed: int,
    device: torch.device,
    workers: int = 0,
    progress: Progress | None = None,
    shard: tuple[int, int] = (0, 1),
) -> RunTimes:
    """Evaluate every job, skipping batches already stored.

    `shard = (rank, world_size)` keeps every world_size-th batch (under torchrun); batches
    keep their global numbers, and so their seeds, whatever the number of processes.
    """
    rank, world = shard
    progress = progress or _NoProgress()
    times = RunTimes()
    for job in jobs:
        planned, source = job.planned, job.data
        chosen = source.indices[: planned.max_samples] if planned.max_samples else source.indices
        numbered = enumerate(batch_indices(chosen, batch_size))
        mine = [(b, batch) for b, batch in numbered if b % world == rank]
        records = store.records_for(planned.label)
        todo = [(b, batch) for b, batch in mine if not set(batch) <= records.keys()]
        total = sum(len(batch) for _, batch in mine)
        progress.start(planned.label, total, total - sum(len(batch) for _, batch in todo))
        start = time.perf_counter()
        dataset, perturbed_on_load = _loaded_data(job, seed)
        summary = getattr(dataset, "perturbation_summary", None)
        if summary:
            times.summaries[planned.label] = dict(summary)
        scored = restrict_outputs(model, source.output_classes)
        loaded = task.batches(dataset, [batch for _, batch in todo], device, workers)
        for (number, batch), (inputs, targets) in zip(todo, loaded, strict=True):
            batch_seed = derive_seed(seed, planned.label, number)
            if perturbed_on_load:
                task.check_inputs(inputs, name=planned.label)
                columns = _rerun(scored, task, inputs, targets, batch_seed)
            else:
                columns = perturb_and_score(scored, task, planned, inputs, targets, batch_seed)
            store.append(planned.label, batch, columns)
            progress.advance(len(batch))
        times.seconds[planned.label] = time.perf_counter() - start
        progress.finish()
    return times


def _loaded_data(job: Job, seed: int) -> tuple[Dataset, bool]:
    """What the job's batches are loaded from, and whether loading already perturbs them
    (pre-rendered data, or a sample perturbation applied in the loader)."""
    if job.prerendered:
        return job.data.dataset, True
    perturbation = job.planned.perturbation
    if isinstance(perturbation, SamplePerturbation):
        return PerturbedSamples(job.data.dataset, perturbation, seed, job.planned.label), True
    if isinstance(perturbation, DatasetPerturbation):
        return perturbation.perturb_dataset(job.data.dataset, seed), True
    return job.data.dataset, False


def _rerun(
    model: torch.nn.Module,
    task: Task,
    perturbed: torch.Tensor,
    targets: torch.Tensor,
    batch_seed: int,
) -> Columns:
    # The reported metrics come from this re-run, never from the attack's own bookkeeping.
    seed_everything(derive_seed(batch_seed, "rerun"))
    return task.score(model, perturbed, targets)


def perturb_and_score(
    model: torch.nn.Module,
    task: Task,
    planned: PlannedPerturbation,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    batch_seed: int,
) -> Columns:
    """Perturb one batch, check the result, and score the model on it (the task's records)."""
    seed_everything(batch_seed)
    adaptive: Any = adaptive_attack(model) if planned.differentiable_m else nullcontext()
    with adaptive:
        perturbed = planned.perturbation.perturb(model, inputs, targets, batch_seed)
    task.check_perturbed(inputs, perturbed, planned.perturbation, name=planned.label)
    return _rerun(model, task, perturbed, targets, batch_seed)
