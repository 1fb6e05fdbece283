"""`train_sequence_classifier`: a small-scale, seeded trainer for robench's LRA classifiers,
sized by the data it reads (`open_lra`), with the paper's recipe (App. F.9: Adam, lr 1e-4, no
weight decay) by default; validated by top-1, the best checkpoint kept. Model kwargs and
recipe: docs/sequence-classification.md.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from robench._core.distributed import resolve_device
from robench._core.errors import ConfigError, DataError
from robench._core.seeding import seed_everything
from robench.models.spec import ModelSpec
from robench.models.zoo.lm_registry import (
    create_language_model,
    is_language_model,
    language_model_task,
)
from robench.tasks.sequence_classification import check_fits, open_lra_data
from robench.tasks.sequence_data import SEQUENCE_CLASSIFICATION, SequenceData, collate_sequences
from robench.training.loop import (
    ClassifierResult,
    TrainProgress,
    TrainSettings,
    majority_share,
    run_steps,
    save_checkpoint,
    subset_loaders,
    top1,
)

logger = logging.getLogger(__name__)


@dataclass
class SequenceTrainConfig(TrainSettings):
    """Everything `robench train` takes for an LRA sequence classifier."""

    data: str = ""  # an LRA dataset's folder (no built-in data)
    lra_task: str | None = None  # listops, text, retrieval, image or pathfinder
    out_dir: Path = Path("runs/train-lra")
    batch_size: int = 32  # the paper's for ListOps, Text and Retrieval
    lr: float = 1e-4  # the paper's (Adam, App. F.9)
    weight_decay: float = 0.0
    val_split: str = "val"
    val_every: int = 200
    label_smoothing: float = 0.0
    train_limit: int | None = None  # train on a seeded subset of N sequences
    workers: int = 0


def trains_a_sequence_classifier(name: str) -> bool:
    """Whether `robench train NAME` is about a registered sequence classifier."""
    return is_language_model(name) and language_model_task(name) == SEQUENCE_CLASSIFICATION


def _model_kwargs(
    config: SequenceTrainConfig, train: SequenceData, val: SequenceData
) -> dict[str, Any]:
    """What the model takes from the data, under the user's --model-kwargs. Its length is
    the longest training or validation sequence: not the reader's padded length (LRA's 2000
    or 4000), since the model pads every batch to its length, and not the training split's
    alone, or a longer validation sequence would be refused after the model is built."""
    kwargs = {
        "vocab_size": train.vocab_size,
        "num_classes": len(train.classes),
        "pad_id": train.pad_id,
        "pair": train.pair,
        "lra_task": train.task_name,
        **config.model_kwargs,
    }
    longest = max(train.longest(), val.longest())
    if "max_length" not in config.model_kwargs:
        kwargs["max_length"] = longest
    elif longest > kwargs["max_length"]:
        raise ConfigError(
            f"the training and validation data hold sequences of up to {longest} tokens but "
            f"--model-kwargs sets max_length {kwargs['max_length']}; raise max_length or leave "
            "it out (the data's longest)."
        )
    return kwargs


def train_sequence_classifier(
    config: SequenceTrainConfig, progress: TrainProgress | None = None
) -> ClassifierResult:
    """Train `config.model` on `config.data`; write best/last `.safetensors` in `out_dir`."""
    config.check()
    device = resolve_device(config.device)
    seed_everything(config.seed)
    train, val = (
        open_lra_data(config.data, split, config.lra_task, None, None)
        for split in (config.train_split, config.val_split)
    )
    if val.pair != train.pair or val.vocab_size > train.vocab_size:
        raise DataError(
            f"the {config.val_split} split of {config.data} is not encoded as its "
            f"{config.train_split} split (vocabulary or pairing differ); validate on a split of "
            "the same task and encoding."
        )
    kwargs = _model_kwargs(config, train, val)
    network = create_language_model(config.model, **kwargs).to(device).train()
    check_fits(val, network, config.model)
    spec = ModelSpec(
        architecture=config.model,
        model_kwargs=kwargs,
        num_classes=kwargs["num_classes"],
        classes=list(train.classes),
    )
    train_loader, val_loader, val_idx = subset_loaders(
        config,
        train,
        val,
        train_limit=config.train_limit,
        workers=config.workers,
        collate=functools.partial(collate_sequences, pad_id=train.pad_id),
        val_batch_size=64,
        noun="sequences",
    )

    def step_loss(batch: Any) -> tuple[torch.Tensor, torch.Tensor, int]:
        tokens, labels = batch
        logits = network(tokens.to(device))
        loss = F.cross_entropy(logits, labels.to(device), label_smoothing=config.label_smoothing)
        return loss, loss, config.batch_size

    run = run_steps(
        config,
        network,
        torch.optim.AdamW(network.parameters(), lr=config.lr, weight_decay=config.weight_decay),
        len(train_loader),
        lambda step: train_loader,
        step_loss,
        lambda: {"val_top1": top1(network, val_loader, device)},
        functools.partial(save_checkpoint, network, spec, config),
        progress,
        metric="val_top1",
        describe=lambda values: f"val top-1 {values['val_top1']:.4f}",
    )
    majority = majority_share(torch.tensor([val.targets[i] for i in val_idx], dtype=torch.long))
    return ClassifierResult(**vars(run), classes=tuple(train.classes), majority_share=majority)
