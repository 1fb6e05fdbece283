"""What every `robench train` run shares, whatever the model: its settings, the learning-rate
schedule, one optimiser step, the step loop with its validations and best/last checkpoints,
the progress protocol and the metadata a checkpoint records; the trainers differ only in their
data, loss and validation metric.
"""

from __future__ import annotations

import json
import logging
import math
import operator
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn
from torch.utils.data import DataLoader, Subset

from robench._core.distributed import DistributedContext
from robench._core.errors import ConfigError
from robench._core.version import __version__
from robench.data.subset import select_indices
from robench.models.checkpoints import save_safetensors
from robench.models.spec import ModelSpec, metadata_from_spec

logger = logging.getLogger(__name__)

History = list[dict[str, float]]  # one row per validation: step, loss and the metrics


@dataclass
class TrainSettings:
    """The settings both trainers take; each subclass adds its own and its defaults."""

    model: str  # a registered architecture, or a model card to fine-tune from
    data: str = "fashion-mnist"
    out_dir: Path = Path("runs/train")
    epochs: float = 1.0
    max_steps: int | None = None  # stop after this many optimiser steps (overrides epochs)
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup_steps: int = 100
    clip_grad: float | None = 1.0  # max gradient norm; None or 0: no clipping
    seed: int = 0
    device: str = "cpu"
    train_split: str = "train"
    val_split: str = "test"
    val_limit: int | None = 2000
    val_every: int = 200  # steps between validations (and at the end)
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    command: str = ""

    def check(self, positive: tuple[str, ...] = ()) -> None:
        """For callers of the Python API (the CLI checks its options first): refuse
        settings that would train nothing or forever."""
        for name in ("epochs", "batch_size", "lr", "val_every", *positive):
            value = getattr(self, name)
            if not value > 0:  # also refuses nan
                raise ConfigError(
                    f"--{name.replace('_', '-')} must be positive, got {value}; pass a "
                    "positive value."
                )

    def metadata(self, step: int, **validation: float) -> dict[str, Any]:
        """What a checkpoint records of the run that wrote it."""
        return {
            "command": self.command,
            "robench_version": __version__,
            "step": step,
            **validation,
            "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()},
        }


class TrainProgress(Protocol):
    def start(self, total: int) -> None: ...

    def update(self, step: int, loss: float, samples_per_s: float) -> None: ...

    def finish(self) -> None: ...


class SilentProgress:
    """A `TrainProgress` that shows nothing (the Python API's default)."""

    def start(self, total: int) -> None:
        pass

    def update(self, step: int, loss: float, samples_per_s: float) -> None:
        pass

    def finish(self) -> None:
        pass


def lr_at(step: int, total: int, warmup: int, base: float) -> float:
    """Linear warm-up to `base`, then cosine decay to 0 at `total`."""
    if step < warmup:
        return base * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return base * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def optimizer_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss: torch.Tensor,
    lr: float,
    clip: float | None,
) -> None:
    """One step at learning rate `lr`, with the gradient norm clipped to `clip` when given."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()


def adamw(
    model: nn.Module, settings: TrainSettings, decays: Callable[[str, torch.Tensor], bool]
) -> torch.optim.Optimizer:
    """AdamW with `weight_decay` on the parameters `decays(name, parameter)` picks, none on
    the others."""
    named = list(model.named_parameters())
    return torch.optim.AdamW(
        [
            {
                "params": [p for n, p in named if decays(n, p)],
                "weight_decay": settings.weight_decay,
            },
            {"params": [p for n, p in named if not decays(n, p)], "weight_decay": 0.0},
        ],
        lr=settings.lr,
    )


def save_checkpoint(
    network: nn.Module,
    spec: ModelSpec,
    config: TrainSettings,
    path: Path,
    step: int,
    history: History,
    metadata: dict[str, str] | None = None,
    record: dict[str, Any] | None = None,
) -> None:
    """`network`'s weights as `.safetensors`, with the spec, the trainer's `metadata` (e.g. the
    vocabulary) and the run's record: its config, its last validation and `record`."""
    validation = {k: v for k, v in history[-1].items() if k not in ("step", "loss")}
    training = config.metadata(step, **validation) | (record or {})
    extra = (metadata or {}) | {"robench.training.train": json.dumps(training)}
    save_safetensors(network.state_dict(), path, metadata_from_spec(spec) | extra)


def subset_loaders(  # long: two DataLoaders' settings
    config: TrainSettings,
    train_set: Any,
    val_set: Any,
    *,
    train_limit: int | None,
    workers: int,
    collate: Callable[[list[Any]], Any] | None,
    val_batch_size: int,
    noun: str,
    dist: DistributedContext | None = None,
) -> tuple[DataLoader, DataLoader, list[int]]:
    """The seeded training loader over up to `train_limit` samples, full batches only (and
    sharded under torchrun: `dist`), the validation loader over up to `val_limit`, and the
    validation indices; one sentence when the training `noun` make no full batch."""
    train_idx = select_indices(len(train_set), train_limit, config.seed)
    val_idx = select_indices(len(val_set), config.val_limit, config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    sampler = dist.sampler(train_idx, config.seed) if dist is not None else None
    train_loader = DataLoader(
        Subset(train_set, train_idx),
        batch_size=config.batch_size,
        shuffle=sampler is None,
        sampler=sampler,
        generator=generator,
        num_workers=workers,
        drop_last=True,
        collate_fn=collate,
    )
    if len(train_loader) == 0:  # drop_last leaves no batch: the step loop would never end
        per_process = " per process" if dist is not None and dist.world_size > 1 else ""
        refuse_no_full_batch(len(train_idx), config.batch_size, noun, per_process)
    val_loader = DataLoader(
        Subset(val_set, val_idx),
        batch_size=val_batch_size,
        num_workers=workers,
        collate_fn=collate,
    )
    return train_loader, val_loader, val_idx


def top1(model: nn.Module, batches: Iterable[Any], device: torch.device) -> float:
    """Top-1 accuracy of `model` over `(inputs, labels)` batches, labels on the CPU."""
    correct = total = 0
    with torch.no_grad():
        for inputs, labels in batches:
            correct += int((model(inputs.to(device)).argmax(-1).cpu() == labels).sum())
            total += len(labels)
    return correct / max(1, total)


def with_aux_loss(model: nn.Module, loss: torch.Tensor, weight: float) -> torch.Tensor:
    """`loss` plus `weight` times a mixture-of-experts model's load-balancing loss
    (`model.aux_loss`, set by its forward; CompeteSMoE's weight is 0.01); others: `loss`."""
    aux = getattr(model, "aux_loss", None)
    return loss + weight * aux if aux is not None else loss


def refuse_no_full_batch(n: int, batch_size: int, noun: str, per_process: str = "") -> None:
    """The error for training data that makes no full batch (the step loop would never end)."""
    raise ConfigError(
        f"the {n} training {noun} make no full batch of {batch_size}{per_process}; lower "
        "--batch-size or raise --train-limit."
    )


def seeded_batches(n: int, batch_size: int, generator: torch.Generator) -> list[torch.Tensor]:
    """One epoch of `n` items in a seeded order, as full batches of indices (the rest dropped)."""
    return list(torch.randperm(n, generator=generator).split(batch_size))[: n // batch_size]


@dataclass
class LoopResult:
    """What a training run wrote and saw; each trainer's result adds its own."""

    best_path: Path
    last_path: Path
    best_val: float  # the best value of the validation metric
    steps: int
    history: History


@dataclass
class ClassifierResult(LoopResult):
    """A text or sequence classifier's run, with its classes."""

    classes: tuple[str, ...]
    majority_share: float  # the validation split's largest class share: chance accuracy


def majority_share(labels: torch.Tensor) -> float:
    """The largest class's share of `labels`: the accuracy of always guessing it."""
    return max(torch.bincount(labels).tolist(), default=0) / max(1, len(labels))


def run_steps(  # long: one loop of steps, validations and saves, each a callable
    config: TrainSettings,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    steps_per_epoch: int,
    epoch: Callable[[int], Iterable[Any]],
    step_loss: Callable[[Any], tuple[torch.Tensor, torch.Tensor, int]],
    validate: Callable[[], dict[str, float]],
    save: Callable[[Path, int, History], None],
    progress: TrainProgress | None,
    *,
    metric: str,
    describe: Callable[[dict[str, float]], str],
    best: float = -math.inf,
    improves: Callable[[float, float], bool] = operator.gt,
    is_main: bool = True,
) -> LoopResult:
    """Train for `max_steps` (or `epochs` of `steps_per_epoch`) steps: `epoch(step)` gives
    one epoch's batches, `step_loss(batch)` (the loss stepped on, the loss reported, the
    samples or tokens seen). Every `val_every` steps and at the end `validate()`; the best by
    `metric` (`improves` on `best`) is saved as `best.safetensors`, the last state as
    `last.safetensors` in `out_dir`. `is_main`: this process logs and saves (torchrun)."""
    progress = progress or SilentProgress()
    total = config.max_steps or max(1, round(config.epochs * steps_per_epoch))
    config.out_dir.mkdir(parents=True, exist_ok=True)
    best_path, last_path = config.out_dir / "best.safetensors", config.out_dir / "last.safetensors"
    history: History = []
    step, seen, tick = 0, 0, time.perf_counter()
    progress.start(total)
    while step < total:
        for batch in epoch(step):
            objective, loss, samples = step_loss(batch)
            lr = lr_at(step, total, config.warmup_steps, config.lr)
            optimizer_step(model, optimizer, objective, lr, config.clip_grad)
            step += 1
            seen += samples
            value = loss.item()  # one host sync per step, shared by the progress, history and log
            progress.update(step, value, seen / max(1e-9, time.perf_counter() - tick))
            if step % config.val_every == 0 or step == total:
                model.eval()  # every trainer validates in eval mode, then trains on
                values = validate()
                model.train()
                history.append({"step": step, "loss": value, **values})
                if is_main:  # every rank validates the same data; one reports and saves
                    logger.info("step %d: loss %.4f, %s", step, value, describe(values))
                if improves(values[metric], best):
                    best = values[metric]
                    if is_main:
                        save(best_path, step, history)
            if step >= total:
                break
    progress.finish()
    if is_main:
        save(last_path, step, history)
    return LoopResult(best_path, last_path, best, step, history)
