"""What every `robench train` run shares, whatever the model: its settings, the learning-rate
schedule, one optimiser step, the progress protocol and the metadata a checkpoint records.

`train.py` (image classifiers) and `train_lm.py` (language models) differ in their data, loss
and validation metric; everything here is the same for both, so it is written once.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from robench._core.errors import ConfigError
from robench._core.version import __version__


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
    step: int,
    total: int,
    settings: TrainSettings,
) -> None:
    """One step at the scheduled learning rate, with the gradient clipped when asked."""
    for group in optimizer.param_groups:
        group["lr"] = lr_at(step, total, settings.warmup_steps, settings.lr)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if settings.clip_grad:
        nn.utils.clip_grad_norm_(model.parameters(), settings.clip_grad)
    optimizer.step()
