"""`train_text_classifier`: a small-scale, seeded trainer for robench's text classifiers, from
scratch on a vocabulary of the training texts' words or from a pretrained language model
(`init_from`); validated by top-1, the best checkpoint kept. Data, vocabulary and options:
docs/text-classification.md, "Training".
"""

from __future__ import annotations

import functools
import logging
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
from robench.models.spec import ModelSpec
from robench.models.zoo.lm_registry import (
    create_language_model,
    is_language_model,
)
from robench.models.zoo.text_classifier import TEXT_CLASSIFICATION
from robench.training.loop import (
    ClassifierResult,
    TrainProgress,
    TrainSettings,
    adamw,
    majority_share,
    refuse_no_full_batch,
    run_steps,
    save_checkpoint,
    seeded_batches,
    top1,
    with_aux_loss,
)
from robench.training.text_init import init_from_language_model
from robench.training.train_lm import registry_task

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
class TextTrainResult(ClassifierResult):
    vocabulary_size: int


def trains_a_text_classifier(name: str) -> bool:
    """Whether `robench train NAME` is about a text classifier: a registered one, or a model
    card (shipped name or .toml path) of one, which `train_text_classifier` refuses."""
    return registry_task(name) == TEXT_CLASSIFICATION


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
        refuse_no_full_batch(len(train_idx), config.batch_size, "texts")
    generator = torch.Generator().manual_seed(config.seed)
    metadata = vocabulary.to_metadata() | classes_metadata(spec.classes or ())
    val_batches = list(zip(x_val.split(256), y_val.cpu().split(256), strict=True))

    def step_loss(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        logits = network(x_train[rows])
        loss = F.cross_entropy(logits, y_train[rows], label_smoothing=config.label_smoothing)
        loss = with_aux_loss(network, loss, config.aux_loss_weight)
        return loss, loss, config.batch_size

    run = run_steps(
        config,
        network,
        # No weight decay on biases, norms and the pad embedding (1-d tensors).
        adamw(network, config, lambda name, p: p.ndim > 1),
        steps_per_epoch,
        # The order is drawn on the CPU and moved once (the data already lies on `device`).
        lambda step: [
            rows.to(device) for rows in seeded_batches(len(train_idx), config.batch_size, generator)
        ],
        step_loss,
        lambda: {"val_top1": top1(network, val_batches, device)},
        functools.partial(save_checkpoint, network, spec, config, metadata=metadata),
        progress,
        metric="val_top1",
        describe=lambda values: f"val top-1 {values['val_top1']:.4f}",
    )
    return TextTrainResult(
        **vars(run),
        classes=train.classes,
        majority_share=majority_share(y_val),
        vocabulary_size=len(vocabulary),
    )
