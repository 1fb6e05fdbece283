"""`train_language_model`: a small-scale, seeded trainer for registered language models.

The paper's WikiText-103 recipe (Adam, lr 2.5e-4, cosine schedule with warm-up, target
length 256, dropout 0.1 in the model), scaled down for CPU by the same flags as image
training. The vocabulary is built from the training split (words seen at least
`vocab_min_count` times, at most `vocab_size` words, plus any `extra_words`) and stored in
the checkpoint's metadata with the ModelSpec, so `robench eval -c best.safetensors` reads
text exactly as training did. Validation is the perplexity of the validation split, computed
by the language-modeling task (the same windows and scoring as `robench eval`); the
checkpoint with the lowest is kept.
"""

from __future__ import annotations

import json
import logging
import math
import time
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
from robench.models.checkpoints import save_safetensors
from robench.models.loading import load_model
from robench.models.spec import ModelSpec, bundled_cards, metadata_from_spec, read_card
from robench.models.zoo.lm_registry import (
    create_language_model,
    is_language_model,
    language_model_task,
)
from robench.tasks.language_modeling import LanguageModeling
from robench.training.loop import SilentProgress, TrainProgress, TrainSettings, optimizer_step

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
class LanguageTrainResult:
    best_path: Path
    last_path: Path
    best_val_perplexity: float
    steps: int
    vocabulary_size: int
    history: list[dict[str, float]]
    is_main: bool = True


def trains_a_language_model(name: str) -> bool:
    """Whether `robench train NAME` trains a language model: a registered one, or a model
    card (shipped name or .toml path) of one, which is then fine-tuned. Text classifiers
    share the registry but not this trainer (train_text.py)."""
    if is_language_model(name):
        return language_model_task(name) == "language-modeling"
    cards = bundled_cards()
    path = Path(name) if name.endswith(".toml") else cards.get(name)
    if path is None or not path.is_file():
        return False
    architecture = read_card(path).architecture
    return (
        architecture is not None
        and is_language_model(architecture)
        and language_model_task(architecture) == "language-modeling"
    )


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
    ids: list[int] = []
    for line in lines:
        ids += vocabulary.encode(line)
        ids.append(vocabulary.eos_id)
    return torch.tensor(ids, dtype=torch.long)


def _validation_perplexity(
    model: nn.Module, windows: Any, indices: list[int], device: torch.device
) -> float:
    task = LanguageModeling()
    model.eval()
    nll = tokens = 0.0
    for start in range(0, len(indices), 16):
        inputs, targets = task.load_batch(windows, indices[start : start + 16], device)
        columns = task.score(model, inputs, targets)
        nll += sum(columns["nll"])
        tokens += sum(columns["tokens"])
    model.train()
    return math.exp(nll / max(1.0, tokens))


def train_language_model(
    config: LanguageTrainConfig, progress: TrainProgress | None = None
) -> LanguageTrainResult:
    """Train `config.model` on `config.data`; write best/last `.safetensors` in `out_dir`."""
    config.check(positive=("target_length",))
    progress = progress or SilentProgress()
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
    steps_per_epoch = n_sequences // config.batch_size
    total = config.max_steps or max(1, round(config.epochs * steps_per_epoch))
    optimizer = torch.optim.Adam(
        network.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    generator = torch.Generator().manual_seed(config.seed)
    config.out_dir.mkdir(parents=True, exist_ok=True)
    best_path = config.out_dir / "best.safetensors"
    last_path = config.out_dir / "last.safetensors"
    history: list[dict[str, float]] = []
    best = math.inf
    step = 0
    network.train()
    progress.start(total)
    tick, seen = time.perf_counter(), 0
    while step < total:
        # One epoch: every sequence once, in a seeded order (sequences start at multiples of
        # the target length; the final partial one is dropped).
        order = torch.randperm(n_sequences, generator=generator)
        for first in range(0, steps_per_epoch * config.batch_size, config.batch_size):
            starts = order[first : first + config.batch_size] * length
            rows = torch.stack([stream[s : s + length + 1] for s in starts.tolist()]).to(device)
            logits = network(rows[:, :-1])
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), rows[:, 1:].flatten())
            aux = getattr(network, "aux_loss", None)  # MoE load balancing, set by forward
            objective = loss + config.aux_loss_weight * aux if aux is not None else loss
            optimizer_step(network, optimizer, objective, step, total, config)
            step += 1
            seen += rows[:, 1:].numel()
            progress.update(step, loss.item(), seen / max(1e-9, time.perf_counter() - tick))
            if step % config.val_every == 0 or step == total:
                ppl = _validation_perplexity(network, val_windows, val_indices, device)
                history.append({"step": step, "loss": loss.item(), "val_perplexity": ppl})
                logger.info("step %d: loss %.4f, val perplexity %.2f", step, loss.item(), ppl)
                if ppl < best:
                    best = ppl
                    _save(network, spec, vocabulary, config, best_path, step, ppl)
            if step >= total:
                break
    progress.finish()
    _save(network, spec, vocabulary, config, last_path, step, history[-1]["val_perplexity"])
    return LanguageTrainResult(best_path, last_path, best, step, len(vocabulary), history)


def _save(
    network: nn.Module,
    spec: ModelSpec,
    vocabulary: Vocabulary,
    config: LanguageTrainConfig,
    path: Path,
    step: int,
    perplexity: float,
) -> None:
    training = config.metadata(step, val_perplexity=perplexity)
    metadata = (
        metadata_from_spec(spec)
        | vocabulary.to_metadata()
        | {"robench.training.train": json.dumps(training)}
    )
    save_safetensors(network.state_dict(), path, metadata)
