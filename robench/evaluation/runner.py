"""Suite x model x data -> per-sample results: batching, seeding, checks and resume.

For every planned perturbation the runner feeds batches of pixel-space images to the attack,
checks what comes back (eps-ball, [0, 1], finite), re-runs the model on it and appends the
top-k predictions to the sample store. Accuracy is always computed from that re-run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch.utils.data import DataLoader, Dataset

from robench._core.batching import batch_indices
from robench._core.seeding import derive_seed, seed_everything
from robench.evaluation.sample_store import SampleStore
from robench.evaluation.suites import PlannedPerturbation
from robench.models.zoo import set_differentiable
from robench.perturbations.checks import check_adversarial

logger = logging.getLogger(__name__)

TOP_K = 5


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


def load_batch(
    dataset: Dataset, indices: Sequence[int], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Images (B, C, H, W) and labels (B,) of `indices`, on `device` (for one-off batches)."""
    items = [dataset[i] for i in indices]
    images = torch.stack([x for x, _ in items]).to(device)
    labels = torch.tensor([int(y) for _, y in items], device=device)
    return images, labels


def run_plan(
    model: torch.nn.Module,
    dataset: Dataset,
    indices: Sequence[int],
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
    """Evaluate every planned perturbation on `indices`, skipping batches already stored.

    `shard = (rank, world_size)` keeps every world_size-th batch (under torchrun); batches keep
    their global numbers, and so their seeds, whatever the number of processes.
    """
    rank, world = shard
    progress = progress or _NoProgress()
    times = RunTimes()
    for planned in plan:
        chosen = indices[: planned.max_samples] if planned.max_samples else indices
        numbered = enumerate(batch_indices(chosen, batch_size))
        mine = [(b, batch) for b, batch in numbered if b % world == rank]
        records = store.records_for(planned.label)
        todo = [(b, batch) for b, batch in mine if not set(batch) <= records.labels.keys()]
        total = sum(len(batch) for _, batch in mine)
        progress.start(planned.label, total, total - sum(len(batch) for _, batch in todo))
        start = time.perf_counter()
        loader = DataLoader(
            dataset, batch_sampler=[batch for _, batch in todo], num_workers=workers
        )
        for (number, batch), (images, labels) in zip(todo, loader, strict=True):
            images, labels = images.to(device), labels.to(device)
            topk = attack_batch(
                model, planned, images, labels, derive_seed(seed, planned.label, number)
            )
            store.append(planned.label, batch, labels.tolist(), topk)
            progress.advance(len(batch))
        times.seconds[planned.label] = time.perf_counter() - start
        progress.finish()
    return times


def attack_batch(
    model: torch.nn.Module,
    planned: PlannedPerturbation,
    images: torch.Tensor,
    labels: torch.Tensor,
    batch_seed: int,
) -> list[list[int]]:
    seed_everything(batch_seed)
    adaptive = set_differentiable(model, True) if planned.differentiable_m else nullcontext()
    with adaptive:
        perturbed = planned.perturbation.perturb(model, images, labels, batch_seed)
    perturbation = planned.perturbation
    check_adversarial(
        images,
        perturbed,
        perturbation.eps,
        name=planned.label,
        threat=perturbation.threat_model,
    )
    # The reported accuracy comes from this re-run, never from the attack's own bookkeeping.
    seed_everything(derive_seed(batch_seed, "rerun"))
    with torch.no_grad():
        logits = model(perturbed)
    k = min(TOP_K, logits.shape[-1])
    return logits.topk(k, dim=-1).indices.tolist()
