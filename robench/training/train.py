"""`train`: a small-scale, seeded trainer for registered image classifiers and segmenters.

AdamW, linear warm-up then cosine decay, label smoothing, gradient clipping, periodic
validation, the best checkpoint kept; `noise_sd` trains under Gaussian pixel noise
(training/noise.py), `adversarial` on PGD or TRADES examples (training/adversarial.py); under
`torchrun` with DistributedDataParallel. Checkpoints: docs/formats.md, "Checkpoint metadata".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler

from robench._core.distributed import DistributedContext
from robench._core.errors import ConfigError
from robench._core.seeding import seed_everything
from robench.models.loading import load_model
from robench.models.normalization import NormalizedModel
from robench.models.spec import ModelSpec
from robench.tasks.registry import load_task
from robench.training.adversarial import (
    LOSSES,
    AdversarialTraining,
    refuse_stray_options,
    robust_top1,
)
from robench.training.loop import (
    History,
    LoopResult,
    TrainProgress,
    TrainSettings,
    adamw,
    run_steps,
    save_checkpoint,
    subset_loaders,
)
from robench.training.noise import NoisyInputs, add_noise
from robench.training.objectives import ImageObjective, objective_for


@dataclass
class TrainConfig(TrainSettings):
    """Everything `robench train` takes for an image model (a classifier or a segmenter)."""

    data: str | None = None  # type: ignore[assignment]  # None: the task's built-in data
    label_smoothing: float = 0.1
    train_limit: int | None = None
    workers: int = 0
    # Std of Gaussian noise added to training (and validation) pixels, as Cohen et al. train
    # for randomized smoothing (training/noise.py); 0: none.
    noise_sd: float = 0.0
    # Adversarial training (training/adversarial.py): "pgd" or "trades", None: none; the
    # attack's L-inf eps in pixel units, its steps, step size (None: 2.5 eps / steps) and
    # TRADES' beta (None: 6).
    adversarial: str | None = None
    eps: float | None = None
    attack_steps: int | None = None  # None: 10
    step_size: float | None = None
    beta: float | None = None

    def attack(self) -> AdversarialTraining | None:
        """The adversarial training asked for (checked), or None; one sentence for attack
        options given without `--adversarial`, or `--beta` without TRADES."""
        if self.adversarial is None:
            refuse_stray_options(self.eps, self.attack_steps, self.step_size, self.beta)
            return None
        if self.adversarial not in LOSSES:
            raise ConfigError(
                f"--adversarial {self.adversarial} is not a method; pass one of "
                f"{', '.join(LOSSES)}."
            )
        if self.eps is None:
            raise ConfigError(
                f"--adversarial {self.adversarial} needs the attack's L-inf radius; pass --eps "
                "in pixel units, e.g. --eps 0.1."
            )
        if self.beta is not None and self.adversarial != "trades":
            raise ConfigError(
                f"--beta weighs TRADES' KL term and --adversarial {self.adversarial} has none; "
                "leave --beta out or pass --adversarial trades."
            )
        attack = AdversarialTraining(
            self.adversarial,
            self.eps,
            10 if self.attack_steps is None else self.attack_steps,
            self.step_size,
            6.0 if self.beta is None else self.beta,
        )
        attack.check()
        return attack


ROBUST_METRIC = "val_robust_top1"  # the metric adversarial training keeps its best by


@dataclass
class TrainResult(LoopResult):
    is_main: bool = True  # False on the other ranks of a torchrun job
    metric: str = "val_top1"  # which metric best_val is (training/objectives.py)
    metric_label: str = "val top-1"


def _validate(
    objective: ImageObjective,
    model: nn.Module,
    loader: DataLoader,
    device: torch.device,
    robust: tuple[nn.Module, AdversarialTraining, int] | None = None,
) -> dict[str, float]:
    """The objective's metric on the validation images and, with `robust` (the bare model,
    the training attack and the seed), top-1 under the training attack's PGD."""
    if isinstance(model, NoisyInputs):
        model.reset()  # every validation scores the same noisy images
    values = {objective.metric: objective.validate(model, loader, device)}
    if robust is not None:
        bare, attack, seed = robust
        values[ROBUST_METRIC] = robust_top1(bare, loader, attack, seed, device)
    return values


def _setup(config: TrainConfig, dist: DistributedContext) -> tuple[Any, ...]:
    """The loaded model, its task's objective, the datasets and the output class count."""
    overrides = ModelSpec(model_kwargs=config.model_kwargs)
    loaded = load_model(config.model, overrides=overrides, device=dist.device)
    if not isinstance(loaded.model, NormalizedModel) or loaded.preprocessing is None:
        raise ConfigError(  # `robench train` sends language models to train_lm.py
            f"{config.model} is not an image model; train a language model with "
            "robench.training.train_lm.train_language_model."
        )
    objective = objective_for(loaded, config.model)
    data = config.data or load_task(objective.task).default_data
    train_set = objective.open_split(data, loaded, config.train_split)
    val_set = objective.open_split(data, loaded, config.val_split)
    first = train_set[0][0].unsqueeze(0).to(dist.device)
    n_out = objective.output_classes(loaded.model(first))
    if len(train_set.classes) > n_out:
        raise ConfigError(
            f"the data has {len(train_set.classes)} classes but {config.model} predicts {n_out}; "
            f"pass --model-kwargs '{{\"num_classes\": {len(train_set.classes)}}}'."
        )
    return loaded, objective, train_set, val_set, n_out


def train(  # long: the loop with its adversarial, noise and validation steps, each a function
    config: TrainConfig, progress: TrainProgress | None = None
) -> TrainResult:
    """Train `config.model` and write best/last `.safetensors` checkpoints in `out_dir`.

    `config.model` is a registered architecture (trained from scratch) or a model card of an
    image model, whose checkpoint it fine-tunes; its task (classification or segmentation)
    picks the loss and the validation metric (training/objectives.py). Adversarial training
    keeps the checkpoint of the best robust validation top-1."""
    config.check()
    if not (config.noise_sd >= 0 and math.isfinite(config.noise_sd)):
        raise ConfigError(f"--noise-sd must be >= 0, got {config.noise_sd}; pass e.g. 0.25.")
    attack = config.attack()
    dist = DistributedContext.from_env(config.device)
    seed_everything(config.seed)
    loaded, objective, train_set, val_set, n_out = _setup(config, dist)
    if attack is not None and objective.task != "image-classification":
        raise ConfigError(
            f"--adversarial trains image classifiers and {config.model} is a {objective.task} "
            "model; leave --adversarial out."
        )
    wrapped = loaded.model
    scored: nn.Module = wrapped
    if config.noise_sd:
        scored = NoisyInputs(wrapped, config.noise_sd, config.seed, dist.device)
    # The attack's random starts: its own seeded stream (per rank under torchrun).
    attack_generator = torch.Generator(device=dist.device).manual_seed(config.seed + dist.rank)
    robust = None if attack is None else (wrapped, attack, config.seed)
    metric = objective.metric if attack is None else ROBUST_METRIC
    train_loader, val_loader, _ = subset_loaders(
        config,
        train_set,
        val_set,
        train_limit=config.train_limit,
        workers=config.workers,
        collate=objective.collate,
        val_batch_size=256,
        noun="images",
        dist=dist,
    )
    model = dist.wrap(wrapped.train())
    spec = loaded.spec.model_copy(update={"classes": train_set.classes, "num_classes": n_out})

    def epoch(step: int) -> DataLoader:
        if isinstance(train_loader.sampler, DistributedSampler):
            train_loader.sampler.set_epoch(step // len(train_loader))
        return train_loader

    def step_loss(batch: Any) -> tuple[torch.Tensor, torch.Tensor, int]:
        images, labels = (tensor.to(dist.device) for tensor in batch)
        if config.noise_sd:
            images = add_noise(images, config.noise_sd)  # torch's seeded generator
        if attack is None:
            loss = objective.loss(model(images), labels, config.label_smoothing)
        else:
            loss = LOSSES[attack.method](
                attack, wrapped, model, images, labels, config.label_smoothing, attack_generator
            )
        return loss, loss, len(labels) * dist.world_size

    def save(path: Path, step: int, history: History) -> None:
        # The inner network's weights (normalisation comes from the spec); adversarial
        # training also records the attack and the clean/robust validation curve so far.
        record = None
        if attack is not None:
            record = {"adversarial": attack.metadata(), "validation_curve": history}
        save_checkpoint(wrapped.model, spec, config, path, step, history, record=record)

    run = run_steps(
        config,
        model,
        # No weight decay on biases, norms and position embeddings (as timm's).
        adamw(model, config, lambda name, p: p.ndim > 1 and "pos_embed" not in name),
        len(train_loader),
        epoch,
        step_loss,
        lambda: _validate(objective, scored, val_loader, dist.device, robust),
        save,
        progress,
        metric=metric,
        describe=lambda values: ", ".join(f"{name} {value:.4f}" for name, value in values.items()),
        best=-1.0,
        is_main=dist.is_main,
    )
    dist.close()
    label = objective.metric_label if attack is None else "val robust top-1 (PGD)"
    return TrainResult(**vars(run), is_main=dist.is_main, metric=metric, metric_label=label)
