"""`train_text_classifier`: a small-scale, seeded trainer for robench's text classifiers.

The data is a labelled text dataset (`read_labeled_texts`: the built-in
`python-docs-sections`, GLUE's SST-2 folder, csv / jsonl / parquet / arrow); the vocabulary
is built from the training texts' words (`words_of`, as the language models'), unless the
backbone comes from a pretrained language model (`init_from`, the paper's SST-2 protocol of
Tables 13 and 14: pretrain a Switch LM, fine-tune it as a classifier), whose vocabulary it
keeps. AdamW with the shared warm-up and cosine schedule, label smoothing, and the
load-balancing loss of mixture-of-experts blocks weighted `aux_loss_weight`. Validation is
top-1 on the validation split; the best checkpoint is kept. Checkpoints carry the ModelSpec,
the vocabulary, the class names (`classes_metadata`) and the training settings, so `robench
eval -c best.safetensors` needs only the file.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from robench._core.distributed import resolve_device
from robench._core.errors import ConfigError, DataError
from robench._core.seeding import seed_everything
from robench.data.subset import select_indices
from robench.data.text import BUILTIN_TEXT, Vocabulary, words_of
from robench.data.text.classifier_tokens import classes_metadata, encode_texts
from robench.data.text.labeled_texts import LabeledTexts, read_labeled_texts
from robench.models.checkpoints import save_safetensors
from robench.models.spec import ModelSpec, bundled_cards, metadata_from_spec, read_card
from robench.models.zoo.lm_registry import (
    create_language_model,
    is_language_model,
    language_model_task,
)
from robench.models.zoo.text_classifier import TEXT_CLASSIFICATION
from robench.training.loop import SilentProgress, TrainProgress, TrainSettings, optimizer_step
from robench.training.text_init import init_from_language_model

logger = logging.getLogger(__name__)


@dataclass
class TextTrainConfig(TrainSettings):
    """Everything `robench train` takes for a text classifier."""

    data: str = "python-docs-sections"
    out_dir: Path = Path("runs/train-text")
    batch_size: int = 32
    lr: float = 1e-3
    val_every: int = 200
    # None: the data's labelled evaluation split (`test`; GLUE's `dev.tsv`, its test has no labels)
    val_split: str | None = None  # type: ignore[assignment]
    label_smoothing: float = 0.1
    train_limit: int | None = None  # train on a seeded subset of N texts
    vocab_min_count: int = 3
    vocab_size: int | None = None
    init_from: Path | None = None  # a language model's checkpoint: backbone and vocabulary
    aux_loss_weight: float = 0.01  # load balancing of MoE blocks (CompeteSMoE's 0.01)
    layout: str | None = None  # read_labeled_texts' options, None: detected / defaults
    text_field: str | None = None
    label_field: str = "label"


@dataclass
class TextTrainResult:
    best_path: Path
    last_path: Path
    best_val_top1: float
    steps: int
    vocabulary_size: int
    classes: tuple[str, ...]
    majority_share: float  # the validation split's largest class share: chance accuracy
    history: list[dict[str, float]]


def trains_a_text_classifier(name: str) -> bool:
    """Whether `robench train NAME` is about a text classifier: a registered one, or a model
    card (shipped name or .toml path) of one, which `train_text_classifier` refuses."""
    cards = bundled_cards()
    path = Path(name) if name.endswith(".toml") else cards.get(name)
    if path is not None and path.is_file():
        name = read_card(path).architecture or name
    return is_language_model(name) and language_model_task(name) == TEXT_CLASSIFICATION


def _read_split(config: TextTrainConfig, split: str | None) -> LabeledTexts:
    if config.data in BUILTIN_TEXT:
        raise DataError(
            f"{config.data} is a language-modeling corpus without labels; train a text "
            "classifier on labelled texts: python-docs-sections (default), a GLUE SST-2 folder "
            "or a csv / jsonl / parquet file with a label column."
        )
    return read_labeled_texts(
        config.data,
        split,
        layout=config.layout,
        text_field=config.text_field,
        label_field=config.label_field,
    )


def _build_model(
    config: TextTrainConfig, train: LabeledTexts
) -> tuple[nn.Module, Vocabulary, ModelSpec]:
    """The classifier over a new vocabulary, or over a pretrained LM's backbone and vocabulary."""
    kwargs = {**config.model_kwargs, "num_classes": len(train.classes)}
    if config.init_from is None:
        lines = [words_of(text) for text in train.texts]
        vocabulary = Vocabulary.build(
            lines, min_count=config.vocab_min_count, max_size=config.vocab_size
        )
        network = create_language_model(config.model, vocab_size=len(vocabulary), **kwargs)
        logger.info("vocabulary: %d words from the training texts", len(vocabulary))
    else:
        network, vocabulary = init_from_language_model(config.model, config.init_from, kwargs)
    spec = ModelSpec(
        architecture=config.model,
        model_kwargs=kwargs,
        num_classes=len(train.classes),
        classes=list(train.classes),
    )
    return network, vocabulary, spec


def _optimizer(model: nn.Module, config: TextTrainConfig) -> torch.optim.Optimizer:
    """AdamW without weight decay on biases, norms and the pad embedding (1-d tensors)."""
    params = list(model.parameters())
    return torch.optim.AdamW(
        [
            {"params": [p for p in params if p.ndim > 1], "weight_decay": config.weight_decay},
            {"params": [p for p in params if p.ndim <= 1], "weight_decay": 0.0},
        ],
        lr=config.lr,
    )


def _top1(model: nn.Module, ids: torch.Tensor, labels: torch.Tensor) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for start in range(0, len(ids), 256):
            logits = model(ids[start : start + 256])
            correct += int((logits.argmax(-1) == labels[start : start + 256]).sum())
    model.train()
    return correct / max(1, len(ids))


def _loss(model: nn.Module, logits: torch.Tensor, y: torch.Tensor, config: TextTrainConfig):
    loss = F.cross_entropy(logits, y, label_smoothing=config.label_smoothing)
    aux = getattr(model, "aux_loss", None)
    return loss + config.aux_loss_weight * aux if aux is not None else loss


def _encoded(
    split: LabeledTexts, vocabulary: Vocabulary, length: int, indices: list[int], device: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    ids = encode_texts(vocabulary, [split.texts[i] for i in indices], length)
    labels = torch.tensor([split.labels[i] for i in indices], dtype=torch.long)
    return ids.to(device), labels.to(device)


def train_text_classifier(
    config: TextTrainConfig, progress: TrainProgress | None = None
) -> TextTrainResult:
    """Train `config.model` on `config.data`; write best/last `.safetensors` in `out_dir`."""
    config.check()
    if not is_language_model(config.model):
        raise ConfigError(
            f"{config.model} is a text classifier's model card, and `robench train` trains text "
            "classifiers from scratch or from a language model; train its architecture, e.g. "
            "`robench train text_classifier_nano`, or pass --init-from LM.safetensors."
        )
    progress = progress or SilentProgress()
    device = resolve_device(config.device)
    seed_everything(config.seed)
    train, val = _read_split(config, config.train_split), _read_split(config, config.val_split)
    if val.classes != train.classes:
        raise DataError(
            f"the {val.split} split of {config.data} has classes {list(val.classes)}, "
            f"the {config.train_split} split {list(train.classes)}; give both splits the same "
            "class names."
        )
    network, vocabulary, spec = _build_model(config, train)
    network = network.to(device).train()
    length = cast(int, network.max_length)  # the classifier reads this many words
    train_idx = select_indices(len(train), config.train_limit, config.seed)
    x_train, y_train = _encoded(train, vocabulary, length, train_idx, device)
    val_idx = select_indices(len(val), config.val_limit, config.seed)
    x_val, y_val = _encoded(val, vocabulary, length, val_idx, device)
    steps_per_epoch = len(train_idx) // config.batch_size
    if steps_per_epoch == 0:
        raise ConfigError(
            f"the {len(train_idx)} training texts make no full batch of {config.batch_size}; "
            "lower --batch-size or raise --train-limit."
        )
    total = config.max_steps or max(1, round(config.epochs * steps_per_epoch))
    optimizer = _optimizer(network, config)
    generator = torch.Generator().manual_seed(config.seed)
    config.out_dir.mkdir(parents=True, exist_ok=True)
    best_path, last_path = config.out_dir / "best.safetensors", config.out_dir / "last.safetensors"
    history: list[dict[str, float]] = []
    best, step, tick = -math.inf, 0, time.perf_counter()
    progress.start(total)
    while step < total:
        order = torch.randperm(len(train_idx), generator=generator).to(device)
        for first in range(0, steps_per_epoch * config.batch_size, config.batch_size):
            rows = order[first : first + config.batch_size]
            loss = _loss(network, network(x_train[rows]), y_train[rows], config)
            optimizer_step(network, optimizer, loss, step, total, config)
            step += 1
            rate = step * config.batch_size / max(1e-9, time.perf_counter() - tick)
            progress.update(step, loss.item(), rate)
            if step % config.val_every == 0 or step == total:
                top1 = _top1(network, x_val, y_val)
                history.append({"step": step, "loss": loss.item(), "val_top1": top1})
                logger.info("step %d: loss %.4f, val top-1 %.4f", step, loss.item(), top1)
                if top1 > best:
                    best = top1
                    _save(network, spec, vocabulary, config, best_path, step, top1)
            if step >= total:
                break
    progress.finish()
    _save(network, spec, vocabulary, config, last_path, step, history[-1]["val_top1"])
    majority = max(torch.bincount(y_val).tolist(), default=0) / max(1, len(y_val))
    return TextTrainResult(
        best_path, last_path, best, step, len(vocabulary), train.classes, majority, history
    )


def _save(
    network: nn.Module,
    spec: ModelSpec,
    vocabulary: Vocabulary,
    config: TextTrainConfig,
    path: Path,
    step: int,
    top1: float,
) -> None:
    training = config.metadata(step, val_top1=top1)
    metadata = (
        metadata_from_spec(spec)
        | vocabulary.to_metadata()
        | classes_metadata(spec.classes or ())
        | {"robench.training.train": json.dumps(training)}
    )
    save_safetensors(network.state_dict(), path, metadata)
