"""`train_language_model`: a small-scale, seeded trainer for registered language models, the
paper's WikiText-103 recipe scaled down (Adam, lr 2.5e-4, warm-up + cosine, target length
256); validated by the language-modeling task's perplexity (the same windows and scoring as
`robench eval`), the lowest kept. Vocabulary and options: docs/language-models.md, "Training".
"""

from __future__ import annotations

import functools
import logging
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from robench._core.distributed import resolve_device
from robench._core.errors import ConfigError
from robench._core.seeding import seed_everything
from robench.data.subset import select_indices
from robench.data.text import Vocabulary, open_text_dataset
from robench.data.text.corpora import read_corpus
from robench.models.loading import load_model
from robench.models.spec import ModelSpec, bundled_cards, read_card
from robench.models.zoo.lm_registry import (
    create_language_model,
    is_language_model,
    language_model_task,
)
from robench.tasks.language_modeling import LanguageModeling
from robench.training.loop import (
    LoopResult,
    TrainProgress,
    TrainSettings,
    run_steps,
    save_checkpoint,
    seeded_batches,
    with_aux_loss,
)

logger = logging.getLogger(__name__)


@dataclass
class LanguageTrainConfig(TrainSettings):
    """Everything `robench train` takes for a language model."""

    data: str = "python-docs"
    out_dir: Path = Path("runs/train-lm")
    batch_size: int = 16  # sequences of `target_length` tokens per step
    lr: float = 2.5e-4  # the paper's
    weight_decay: float = 0.0  # Adam, as the paper
    clip_grad: float | None = 0.25
    val_split: str = "valid"
    val_limit: int | None = 200  # validation windows
    target_length: int = 256
    vocab_min_count: int = 3
    vocab_size: int | None = None
    # Words added to the vocabulary though training never shows them: Word Swap's 'AAA', so
    # the swap token is a rare word of the vocabulary as it is in WikiText-103's (otherwise
    # it reads as <unk>, which a model predicts at the corpus's unknown-word rate).
    extra_words: tuple[str, ...] = ()
    # Weight of a mixture-of-experts model's load-balancing loss (`model.aux_loss`, moe_lm.py;
    # CompeteSMoE's 0.01); models without one ignore it.
    aux_loss_weight: float = 0.01


@dataclass
class LanguageTrainResult(LoopResult):
    vocabulary_size: int  # best_val: the lowest validation perplexity


def registry_task(name: str) -> str | None:
    """The task of what `robench train NAME` trains when it is in the language-model registry:
    a registered model, or a model card (shipped name or .toml path) of one; else None."""
    if not is_language_model(name):
        path = Path(name) if name.endswith(".toml") else bundled_cards().get(name)
        name = (read_card(path).architecture or "") if path is not None and path.is_file() else ""
    return language_model_task(name) if is_language_model(name) else None


def trains_a_language_model(name: str) -> bool:
    """Whether `robench train NAME` trains a language model: a registered one, or a model
    card of one, which is then fine-tuned. Text classifiers share the registry but not this
    trainer (train_text.py)."""
    return registry_task(name) == "language-modeling"


def _from_scratch(
    config: LanguageTrainConfig, lines: Sequence[Sequence[str]]
) -> tuple[nn.Module, Vocabulary, ModelSpec]:
    """A new network of the registered architecture, on a vocabulary built from `lines`."""
    built = Vocabulary.build(lines, min_count=config.vocab_min_count, max_size=config.vocab_size)
    added = tuple(dict.fromkeys(w for w in config.extra_words if w not in built))
    vocabulary = Vocabulary((*built.words, *added))
    logger.info(
        "vocabulary: %d words from the %s split of %s",
        len(vocabulary),
        config.train_split,
        config.data,
    )
    network = create_language_model(config.model, vocab_size=len(vocabulary), **config.model_kwargs)
    return (
        network,
        vocabulary,
        ModelSpec(architecture=config.model, model_kwargs=config.model_kwargs),
    )


def _from_card(config: LanguageTrainConfig) -> tuple[nn.Module, Vocabulary, ModelSpec]:
    """The card's network and weights, to fine-tune on the card's own vocabulary: its output
    layer is sized by that vocabulary, so the vocabulary options cannot change it."""
    overrides = ModelSpec(model_kwargs=config.model_kwargs) if config.model_kwargs else None
    loaded = load_model(config.model, overrides=overrides)
    if loaded.vocabulary is None:
        raise ConfigError(f"{config.model} is not a language model; pass a language model.")
    missing = [w for w in config.extra_words if w not in loaded.vocabulary]
    if missing:
        raise ConfigError(
            f"{config.model}'s vocabulary lacks {', '.join(missing)}, and fine-tuning keeps "
            f"the card's vocabulary; drop --extra-word, or train {loaded.architecture} from "
            "scratch to build a vocabulary with it."
        )
    logger.info(
        "fine-tuning %s from its checkpoint, on its vocabulary of %d words",
        config.model,
        len(loaded.vocabulary),
    )
    spec = ModelSpec(architecture=loaded.architecture, model_kwargs=loaded.model_kwargs)
    return loaded.model, loaded.vocabulary, spec


def _training_stream(lines: Sequence[Sequence[str]], vocabulary: Vocabulary) -> torch.Tensor:
    """The lines' token ids, each line followed by <eos>, as one 1-d tensor."""
    eos = vocabulary.eos_id
    return torch.tensor([i for line in lines for i in (*vocabulary.encode(line), eos)])


def _validation_perplexity(model: nn.Module, windows: Any, indices: list[int]) -> float:
    task, device = LanguageModeling(), next(model.parameters()).device
    nll = tokens = 0.0
    for start in range(0, len(indices), 16):
        inputs, targets = task.load_batch(windows, indices[start : start + 16], device)
        columns = task.score(model, inputs, targets)
        nll += sum(columns["nll"])
        tokens += sum(columns["tokens"])
    return math.exp(nll / max(1.0, tokens))


def train_language_model(
    config: LanguageTrainConfig, progress: TrainProgress | None = None
) -> LanguageTrainResult:
    """Train `config.model` on `config.data`; write best/last `.safetensors` in `out_dir`."""
    config.check(positive=("target_length",))
    device = resolve_device(config.device)
    seed_everything(config.seed)
    lines = read_corpus(config.data, config.train_split).lines  # read once: vocabulary, stream
    if is_language_model(config.model):
        network, vocabulary, spec = _from_scratch(config, lines)
    else:
        network, vocabulary, spec = _from_card(config)
    network = network.to(device)
    stream = _training_stream(lines, vocabulary)
    length = config.target_length
    n_sequences = (len(stream) - 1) // length
    if n_sequences < config.batch_size:
        raise ConfigError(
            f"the train split of {config.data} has {len(stream)} tokens, fewer than one batch "
            f"of {config.batch_size} x {length}; lower --batch-size or --target-length."
        )
    val_windows = open_text_dataset(
        config.data, vocabulary, split=config.val_split, target_length=length
    )
    val_indices = select_indices(len(val_windows), config.val_limit, config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    vocab_metadata = vocabulary.to_metadata()
    network.train()

    def step_loss(starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        rows = torch.stack([stream[s : s + length + 1] for s in (starts * length).tolist()])
        rows = rows.to(device)
        logits = network(rows[:, :-1])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), rows[:, 1:].flatten())
        objective = with_aux_loss(network, loss, config.aux_loss_weight)
        return objective, loss, rows[:, 1:].numel()

    run = run_steps(
        config,
        network,
        torch.optim.Adam(network.parameters(), lr=config.lr, weight_decay=config.weight_decay),
        n_sequences // config.batch_size,
        # Every sequence once per epoch, in a seeded order (sequences start at multiples of the
        # target length; the final partial one is dropped).
        lambda step: seeded_batches(n_sequences, config.batch_size, generator),
        step_loss,
        lambda: {"val_perplexity": _validation_perplexity(network, val_windows, val_indices)},
        functools.partial(save_checkpoint, network, spec, config, metadata=vocab_metadata),
        progress,
        metric="val_perplexity",
        describe=lambda values: f"val perplexity {values['val_perplexity']:.2f}",
        best=math.inf,
        improves=operator.lt,
    )
    return LanguageTrainResult(**vars(run), vocabulary_size=len(vocabulary))
