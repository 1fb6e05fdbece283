"""Suite x model x datasets -> per-sample records: batching, seeding, checks and resume.

For every planned perturbation the runner feeds batches of its dataset to the perturbation,
checks what comes back (its threat model's ball, [0, 1], finite), and has the task score the
model on it into per-sample records appended to the sample store. Metrics are always
computed from that re-run, never from an attack's own bookkeeping.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch.utils.data import Dataset

from robench._core.batching import batch_indices
from robench._core.model_hooks import adaptive_attack
from robench._core.seeding import derive_seed, seed_everything
from robench.evaluation.sample_store import SampleStore
from robench.evaluation.suites import PlannedPerturbation
from robench.perturbations.checks import check_adversarial
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
    """Wall time spent per perturbation in this process (resumed parts count 0)."""

    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class EvalData:
    """One named dataset of an evaluation and the sample indices chosen from it."""

    dataset: Dataset
    indices: Sequence[int]


def run_plan(
    model: torch.nn.Module,
    task: Task,
    data: Mapping[str, EvalData],
    plan: Sequence[PlannedPerturbation],
    store: SampleStore,
    *,
    batch_size: int,
    seed: int,
    device: torch.device,
    workers: int = 0,
    progress: Progress | None = None,
    shard: tuple[int, int] = (0, 1),
) -> RunTimes:
    """Evaluate every planned perturbation on its dataset, skipping batches already stored.

    A perturbation runs on `data[planned.dataset]`, or on the first dataset when it names
    none. `shard = (rank, world_size)` keeps every world_size-th batch (under torchrun);
    batches keep their global numbers, and so their seeds, whatever the number of processes.
    """
    rank, world = shard
    progress = progress or _NoProgress()
    times = RunTimes()
    default = next(iter(data))
    for planned in plan:
        source = data[planned.dataset or default]
        chosen = source.indices[: planned.max_samples] if planned.max_samples else source.indices
        numbered = enumerate(batch_indices(chosen, batch_size))
        mine = [(b, batch) for b, batch in numbered if b % world == rank]
        records = store.records_for(planned.label)
        todo = [(b, batch) for b, batch in mine if not set(batch) <= records.keys()]
        total = sum(len(batch) for _, batch in mine)
        progress.start(planned.label, total, total - sum(len(batch) for _, batch in todo))
        start = time.perf_counter()
        loaded = task.batches(source.dataset, [batch for _, batch in todo], device, workers)
        for (number, batch), (inputs, targets) in zip(todo, loaded, strict=True):
            batch_seed = derive_seed(seed, planned.label, number)
            columns = perturb_and_score(model, task, planned, inputs, targets, batch_seed)
            store.append(planned.label, batch, columns)
            progress.advance(len(batch))
        times.seconds[planned.label] = time.perf_counter() - start
        progress.finish()
    return times


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
    perturbation = planned.perturbation
    check_adversarial(
        inputs,
        perturbed,
        perturbation.eps,
        name=planned.label,
        threat=perturbation.threat_model,
    )
    # The reported metrics come from this re-run, never from the attack's own bookkeeping.
    seed_everything(derive_seed(batch_seed, "rerun"))
    return task.score(model, perturbed, targets)
