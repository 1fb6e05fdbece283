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
The identity (clean) scores batches as loaded; its data is checked on the job's first batch.

Speed modes and the out-of-memory fallback: docs/formats.md, "Speed modes".
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.data import Dataset

from robench._core.batching import batch_indices
from robench._core.errors import DataError
from robench._core.model_hooks import adaptive_attack
from robench._core.progress import NoProgress, Progress
from robench._core.seeding import derive_seed, seed_everything
from robench.evaluation.oom_fallback import SplitOnOutOfMemory
from robench.evaluation.perturbed_samples import PerturbedSamples
from robench.evaluation.speed import SpeedOptions, scoring_precision, to_memory_format
from robench.evaluation.store.sample_store import SampleStore
from robench.evaluation.suites import PlannedPerturbation
from robench.models.pass_counter import PassCount, PassCounter, scoring
from robench.perturbations.base import DatasetPerturbation, PerSampleAttack, SamplePerturbation
from robench.tasks.base import Columns, Task
from robench.tasks.finite_values import (
    ALLOW_FLAG,
    NonFiniteOutputs,
    non_finite_rows,
    nonfinite_allowed,
)

logger = logging.getLogger(__name__)


@dataclass
class RunTimes:
    """Per perturbation, what this process spent (resumed parts count 0) and did."""

    seconds: dict[str, float] = field(default_factory=dict)  # wall time
    passes: dict[str, PassCount] = field(default_factory=dict)  # counted (cost.py)
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)  # `perturbation_summary`
    batch_size_used: int = 0  # smaller than asked when the GPU ran out of memory
    batch_size_note: str | None = None  # where batches were first split, when they were


@dataclass(frozen=True)
class EvalData:
    """One named dataset of an evaluation and the sample indices chosen from it."""

    dataset: Dataset
    indices: Sequence[int]
    # The model outputs its labels 0..K-1 stand for (ImageNet-A/R, a `classes` list): logits
    # are restricted to these before scoring and attacking. None: labels are model outputs.
    output_classes: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Surrogate:
    """The model a transfer attack is crafted on (robench/evaluation/transfer.py), and what
    the report records of it (its provenance, as the evaluated model's)."""

    model: torch.nn.Module
    info: dict[str, Any]
    # The evaluated model itself (same architecture, options and weights): its transfer
    # results would be the white-box ones, so they are listed as missing instead.
    is_target: bool = False


@dataclass(frozen=True)
class Job:
    """A planned perturbation and the data it runs on."""

    planned: PlannedPerturbation
    data: EvalData
    # The data is already perturbed (a pre-rendered corruption): check it, do not perturb it.
    prerendered: bool = False
    # Transfer: the attack runs on this model and the evaluated model scores its images.
    surrogate: Surrogate | None = None


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
    speed: SpeedOptions | None = None,
    model_name: str = "the model",
    allow_nonfinite: bool = False,
) -> RunTimes:
    """Evaluate every job, skipping batches already stored.

    `shard = (rank, world_size)` keeps every world_size-th batch (under torchrun); batches
    keep their global numbers, and so their seeds, whatever the number of processes. `model`
    is already prepared for `speed` (speed.prepare_model); the runner lays out the batches
    and picks each scoring pass's precision. NaN or inf in the data or in the model's
    outputs stops the run naming the sample and `model_name`, unless `allow_nonfinite`.
    """
    surrogates = [job.surrogate.model for job in jobs if job.surrogate is not None]
    r = _Run(model, task, store, batch_size, seed, device, workers, progress or NoProgress(),
             shard, speed or SpeedOptions(), model_name)  # fmt: skip
    with (
        _long_lived_objects_frozen(),
        nonfinite_allowed(allow_nonfinite),
        r.counter.counting(model, *surrogates),
    ):
        for job in jobs:
            _run_job(r, job)
    r.times.batch_size_used, r.times.batch_size_note = r.splitter.size, r.splitter.note
    return r.times


@dataclass
class _Run:
    """run_plan's arguments, and the state it keeps across jobs."""

    model: torch.nn.Module
    task: Task
    store: SampleStore
    batch_size: int
    seed: int
    device: torch.device
    workers: int
    progress: Progress
    shard: tuple[int, int]
    speed: SpeedOptions
    model_name: str
    times: RunTimes = field(default_factory=RunTimes)
    # Every pass of the model (and of transfer attacks' surrogates), per job (cost.py).
    counter: PassCounter = field(default_factory=PassCounter)
    splitter: SplitOnOutOfMemory = field(init=False)

    def __post_init__(self) -> None:
        self.splitter = SplitOnOutOfMemory(self.batch_size)


def _run_job(r: _Run, job: Job) -> None:
    """Evaluate one job's batches of this shard not yet stored, recording its wall time and
    model passes in `r.times`."""
    task, store, progress, counter, times = r.task, r.store, r.progress, r.counter, r.times
    rank, world = r.shard
    planned, source = job.planned, job.data
    chosen = source.indices[: planned.max_samples or None]
    numbered = enumerate(batch_indices(chosen, r.batch_size))
    mine = [(b, batch) for b, batch in numbered if b % world == rank]
    done = store.done(planned.label)
    todo = [(b, batch) for b, batch in mine if not done.issuperset(batch)]
    total = sum(len(batch) for _, batch in mine)
    progress.start(planned.label, total, total - sum(len(batch) for _, batch in todo))
    start = time.perf_counter()
    dataset, perturbed_on_load = _loaded_data(job, r.seed)
    summary = getattr(dataset, "perturbation_summary", None)
    if summary:
        times.summaries[planned.label] = dict(summary)
    scored = task.restrict_outputs(r.model, source.output_classes)
    attacker = scored  # what the attack runs on: the model, or a transfer attack's surrogate
    if job.surrogate is not None:  # restricted as the scored model is
        attacker = task.restrict_outputs(job.surrogate.model, source.output_classes)
    # Inputs made without the model may be scored in lower precision (--amp).
    model_free = perturbed_on_load or not planned.perturbation.uses_model
    precision = functools.partial(scoring_precision, r.speed, r.device, model_free)
    # robench's readers give valid inputs by construction ([0, 1] pixels): the first
    # batch catches one that does not (a plugin that normalises) without a pass over
    # every batch, about 1% of a clean evaluation (benchmarks/bench_harness.py).
    identity = planned.perturbation.identity
    loaded = task.batches(dataset, [batch for _, batch in todo], r.device, r.workers)
    counter.count = PassCount()  # this job's
    for position, ((number, batch), (inputs, targets)) in enumerate(zip(todo, loaded, strict=True)):
        inputs = to_memory_format(r.speed, inputs)
        if perturbed_on_load:
            task.check_inputs(inputs, name=planned.label)
        elif not identity or position == 0:  # an attack costs far more than a look
            task.check_data_values(inputs, batch)
        as_loaded, first_row = perturbed_on_load or identity, number * r.batch_size
        work = _BatchWork(
            r, job, scored, attacker, inputs, targets, as_loaded, precision, first_row, batch
        )
        own = planned.perturbation.own_batch  # smoothing's `batch`, `query_batch`
        before = dataclasses.replace(counter.count)
        columns = r.splitter.run(len(batch), work, f"{planned.label} batch {number}", own)
        counter.count.samples += len(batch)
        # The batch's passes, kept with its records for a resumed run: [forward, backward,
        # scoring, samples].
        spent = list(dataclasses.astuple(counter.count - before))
        store.append(planned.label, batch, columns, spent)
        progress.advance(len(batch))
    resumed = store.claim_resumed_passes(planned.label)  # an earlier process's batches
    times.passes[planned.label] = counter.count + (PassCount(*resumed) if resumed else PassCount())
    times.seconds[planned.label] = time.perf_counter() - start
    progress.finish()


@contextmanager
def _long_lived_objects_frozen() -> Iterator[None]:
    """Keep the garbage collector off what exists before the batches (model, modules, data):
    while the stored batches' results pile up, each full collection would walk all of it
    again, about 8% of a clean evaluation of 10,000 images (benchmarks/bench_harness.py)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@dataclass(frozen=True)
class _BatchWork:
    """One loaded batch of a job, and how to perturb (unless already) and score any part."""

    run: _Run  # its seed, task and model name
    job: Job
    model: torch.nn.Module
    attacker: torch.nn.Module  # the model the attack runs on: `model`, or a surrogate
    inputs: torch.Tensor
    targets: torch.Tensor
    as_loaded: bool  # scored as loaded: perturbed on load, or the identity
    precision: Callable[[], AbstractContextManager[object]]
    first_row: int  # the batch's position among the job's samples
    indices: Sequence[int]  # the batch's dataset indices (per-sample seeds)

    def __call__(self, start: int, stop: int, size: int) -> Columns:
        try:
            return self._run(start, stop, size)
        except NonFiniteOutputs as exc:
            raise self._non_finite(exc, start) from None

    def _non_finite(self, exc: NonFiniteOutputs, start: int) -> DataError:
        """The sentence for non-finite outputs: the data's fault when that row's inputs are
        not finite either, else the model's; with the sample's dataset index."""
        row = exc.rows[0]
        index, name = self.indices[start + row], self.run.model_name
        result = self.job.planned.label
        if non_finite_rows(self.inputs[start + row : start + row + 1]):
            return DataError(
                f"sample {index} of the data holds NaN or inf values, so {name} "
                f"returned non-finite {exc.what} on it ({result}); fix or drop the sample, or "
                f"pass {ALLOW_FLAG} to count it."
            )
        return DataError(
            f"{name} returned non-finite {exc.what} (NaN or inf) on sample {index} "
            f"({result}; {len(exc.rows)} in its batch); its weights or computation diverged, "
            f"so check the checkpoint, or pass {ALLOW_FLAG} to count such samples anyway."
        )

    def _run(self, start: int, stop: int, size: int) -> Columns:
        """Rows [start, stop) of the batch, run as a part of `size` rows. Seeded as the batch
        these rows form with `--batch-size size` (the batch's own seed when unsplit), so a
        batch split out of GPU memory computes what that run computes."""
        planned = self.job.planned
        seed = derive_seed(self.run.seed, planned.label, (self.first_row + start) // size)
        model, task, precision = self.model, self.run.task, self.precision
        rows, targets = self.inputs[start:stop], self.targets[start:stop]
        if self.as_loaded:
            return score_seeded(model, task, rows, targets, seed, precision)
        samples = [derive_seed(self.run.seed, planned.label, i) for i in self.indices[start:stop]]
        attacker = None if self.attacker is model else self.attacker
        return perturb_and_score(
            model, task, planned, rows, targets, seed, precision, samples, attacker
        )


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


def score_seeded(
    model: torch.nn.Module,
    task: Task,
    perturbed: torch.Tensor,
    targets: torch.Tensor,
    batch_seed: int,
    precision: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> Columns:
    """The task's records of the model on a batch as given, seeded from the batch's seed.
    The reported metrics come from this re-run, never from an attack's own bookkeeping."""
    seed_everything(derive_seed(batch_seed, "rerun"))
    with precision(), scoring():  # the counted passes of this re-run are marked as scoring
        return task.score(model, perturbed, targets)


def perturb_and_score(
    model: torch.nn.Module,
    task: Task,
    planned: PlannedPerturbation,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    batch_seed: int,
    precision: Callable[[], AbstractContextManager[object]] = nullcontext,
    sample_seeds: Sequence[int] | None = None,
    attacker: torch.nn.Module | None = None,
) -> Columns:
    """Perturb one batch, check the result, and score the model on it (the task's records),
    both in `precision` (float32 unless --amp applies). A `PerSampleAttack` gets `sample_seeds`
    (by default the batch's seed with each row's position) and its per-sample columns join
    the records. `attacker`: a transfer attack's surrogate, which the attack runs on instead
    of `model`; what the attack finds per sample is then the surrogate's, not kept."""
    seed_everything(batch_seed)
    perturbation = planned.perturbation
    attacked = model if attacker is None else attacker
    adaptive: Any = adaptive_attack(attacked) if planned.differentiable_m else nullcontext()
    extra: Columns = {}
    with adaptive, precision():  # float32 unless the suite runs attacks under --amp
        if isinstance(perturbation, PerSampleAttack):
            seeds = sample_seeds or [derive_seed(batch_seed, i) for i in range(len(inputs))]
            perturbed, extra = perturbation.perturb_samples(attacked, inputs, targets, seeds)
        else:  # an attack's per-sample findings (its `columns`: minimal norms, first success)
            perturbed, extra = perturbation.perturb_with_columns(
                attacked, inputs, targets, batch_seed
            )
    task.check_perturbed(inputs, perturbed, perturbation, name=planned.label)
    if attacker is not None:  # the surrogate's first success or minimal norm: not the model's
        extra = {}
    return {**score_seeded(model, task, perturbed, targets, batch_seed, precision), **extra}
