"""`robench train`: small-scale training of a registered image classifier, segmenter, language
model, text classifier or LRA sequence classifier."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from robench.cli._option_table import REQUIRED, Opt, with_options
from robench.cli._output import err, handle_errors
from robench.cli._parsing import json_object


class _TrainBar:
    def __init__(self, unit: str = "img/s") -> None:
        self._progress = Progress(
            TextColumn("train"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} steps"),
            TextColumn("loss {task.fields[loss]:.4f}"),
            TextColumn("{task.fields[rate]:.0f} " + unit),
            TimeElapsedColumn(),
            console=err,
            disable=not err.is_terminal,
        )
        self._task: TaskID | None = None

    def start(self, total: int) -> None:
        self._progress.start()
        self._task = self._progress.add_task("train", total=total, loss=float("nan"), rate=0.0)

    def update(self, step: int, loss: float, samples_per_s: float) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=step, loss=loss, rate=samples_per_s)

    def finish(self) -> None:
        self._progress.stop()


# `robench train`'s options, one row each (robench/cli/_option_table.py).
TRAIN_OPTIONS = (
    Opt("model", str, REQUIRED,
        "Registered model name (trained from scratch), e.g. vit_nano_patch4_28, or a model card "
        "(fine-tuned from its checkpoint), e.g. transformer_lm_nano_pydocs.", argument=True),
    Opt("data", str, None,
        "Image folder, IDX dir or fashion-mnist (default); for a segmentation model "
        "fashion-scenes (default) or an ADE20K / Cityscapes / VOC / images+masks folder; for a "
        "language model a text corpus (WikiText dir, text files) or python-docs (default) / "
        "pydoc-topics; for a text classifier labelled texts (GLUE SST-2 dir, csv / jsonl / "
        "parquet / arrow) or python-docs-sections (default).", "-d"),
    Opt("out_dir", Path, Path("runs/train"), "Where checkpoints go.", "-o"),
    Opt("epochs", float, 1.0, "Passes over the training data."),
    Opt("max_steps", int, None, "Stop after N optimiser steps."),
    Opt("batch_size", int, None, "Default 128 images / 16 sequences.", "-b"),
    Opt("lr", float, None,
        "Peak learning rate (default: AdamW 1e-3; language models: Adam 2.5e-4)."),
    Opt("weight_decay", float, None,
        "AdamW weight decay, not on biases/norms (default 0.05; sequence classifiers 0)."),
    Opt("warmup_steps", int, 100, "Linear warm-up steps before cosine decay."),
    Opt("label_smoothing", float, None,
        "Cross-entropy label smoothing (default 0.1; sequence classifiers 0)."),
    Opt("clip_grad", float, 1.0, "Max gradient norm (0: off)."),
    Opt("seed", int, 0, "Seed of initialisation, shuffling and subsets."),
    Opt("device", str, "auto",
        "auto (cuda when a GPU is available, else cpu), cpu, cuda or cuda:N."),
    Opt("train_limit", int, None, "Train on a seeded subset of N images."),
    Opt("val_limit", int, 2000, "Validate on a seeded subset of N images."),
    Opt("val_every", int, 200, "Steps between validations."),
    Opt("workers", int, 0, "Data-loading worker processes."),
    Opt("model_kwargs", str, None, 'JSON model kwargs, e.g. \'{"estimator": "random"}\'.'),
    Opt("target_length", int, 256, "Language models: tokens per training sequence."),
    Opt("vocab_min_count", int, 3, "Language models: keep words seen at least N times in train."),
    Opt("vocab_size", int, None, "Language models: at most N vocabulary words."),
    Opt("init_from", Path, None,
        "Text classifiers: start from this language model checkpoint's backbone and vocabulary "
        "(e.g. a switch_lm_nano best.safetensors for switch_classifier_nano)."),
    Opt("aux_loss_weight", float, 0.01,
        "Mixture-of-experts models: weight of the load-balancing loss (0: off)."),
    Opt("noise_sd", float, 0.0,
        "Image models: std of Gaussian noise added to every training and validation image's "
        "pixels (0-1 scale), as Cohen et al. train for randomized smoothing; 0: off."),
    Opt("adversarial", str, None,
        "Image classifiers: adversarial training, pgd (Madry et al. 2018) or trades (Zhang et "
        "al. 2019), against an L-inf attack of --eps; validated clean and under PGD at --eps, "
        "the most robust checkpoint kept."),
    Opt("eps", float, None, "--adversarial: the attack's L-inf radius in pixel units, e.g. 0.1."),
    Opt("steps", int, None, "--adversarial: the attack's steps per example (10)."),
    Opt("step_size", float, None,
        "--adversarial: the attack's step size (default 2.5 * eps / steps)."),
    Opt("beta", float, None, "--adversarial trades: weight of the KL term (default 6)."),
    Opt("lra_task", str, None,
        "Sequence classifiers: the LRA task of --data (listops, text, retrieval, image, "
        "pathfinder)."),
    Opt("extra_word", list[str], None,
        "Language models: add this word to the vocabulary though training never shows it, e.g. "
        "Word Swap's AAA (repeatable)."),
)  # fmt: skip

# What the trainers take: every one the shared options, each kind (`_kind`) its own too.
_SHARED: tuple[str, ...] = (
    "model",
    "out_dir",
    "epochs",
    "max_steps",
    "warmup_steps",
    "clip_grad",
    "seed",
)
_SHARED += ("device", "val_limit", "val_every", "data", "batch_size", "lr")
_TUNING = ("weight_decay", "label_smoothing")  # losses and regularisation of the classifiers
_VOCABULARY = ("vocab_min_count", "vocab_size")
_ATTACK = ("eps", "steps", "step_size", "beta")  # adversarial training's
_TAKES = {
    "sequence": (*_TUNING, "lra_task", "train_limit", "workers"),
    "text": (*_TUNING, "train_limit", *_VOCABULARY, "init_from", "aux_loss_weight"),
    "language": ("target_length", *_VOCABULARY, "extra_word", "aux_loss_weight"),
    "image": (*_TUNING, "train_limit", "workers", "noise_sd", "adversarial", *_ATTACK),
}
# Left out when not given, so that the trainer's own default (an image's or a language
# model's) applies.
_IF_GIVEN = {"data", "batch_size", "lr", *_TUNING}
# The option's name in the trainers' configs, where it differs.
_CONFIG_NAMES = {"steps": "attack_steps", "extra_word": "extra_words"}


@handle_errors
@with_options(*TRAIN_OPTIONS)
def train_command(**given: Any) -> None:
    """Train a registered image classifier, segmenter, language model, text or sequence classifier.

    The checkpoint stores the model name, kwargs, normalisation, input size and class names
    (a language model: its training vocabulary; a text classifier: both), so `robench eval -c
    OUT_DIR/best.safetensors` needs nothing else. Image models: under torchrun it uses
    DistributedDataParallel; for ImageNet-scale runs use timm's train.py (see README). Language
    models: the paper's recipe (Adam, lr 2.5e-4, warm-up + cosine, target length 256),
    validated by perplexity. Text classifiers: AdamW, validated by top-1; --init-from starts
    one from a pretrained language model (the paper's pretrain-then-fine-tune protocol).
    Sequence classifiers (LRA): the paper's Adam, lr 1e-4, no weight decay, on --data of
    --lra-task, validated by top-1 on its val split.

    Examples:
      robench train vit_nano_elliptical_patch4_28 --epochs 10 -o runs/nano-ell
      robench train vit_nano_patch4_28 --max-steps 50 --train-limit 2000 -o /tmp/q
      robench train vit_nano_patch4_28 --epochs 10 --noise-sd 0.25 -o runs/nano-noise
      robench train vit_nano_fmnist --adversarial pgd --eps 0.1 --max-steps 800 -o runs/at
      robench train segmenter_nano_elliptical --max-steps 200 -o runs/seg
      torchrun --nproc_per_node=2 -m robench train vit_nano_patch4_28 --epochs 1
      robench train transformer_lm_nano_elliptical --data python-docs --max-steps 300 -o runs/lm
      robench train transformer_lm_nano_pydocs --data pydoc-topics --max-steps 50 -o runs/lm-ft
      robench train text_classifier_nano_elliptical --max-steps 600 -o runs/text
      robench train switch_classifier_nano --init-from runs/switch-lm/best.safetensors -o runs/sc
      robench train lra_transformer_nano_elliptical --data LISTOPS_DIR --lra-task listops -o runs/lo
    """
    from robench._core.plugins import load_plugins
    from robench.training.adversarial import refuse_stray_options

    model_kwargs = json_object(given["model_kwargs"], "--model-kwargs")
    _refuse_overwriting_inputs(given["model"], given["out_dir"], given["init_from"])
    load_plugins(())
    if given["adversarial"] is None:
        refuse_stray_options(*(given[name] for name in _ATTACK))
    kind = _kind(given["model"])
    _refuse_other_kinds_options(kind, given)
    settings = {
        _CONFIG_NAMES.get(name, name): given[name]
        for name in (*_SHARED, *_TAKES[kind])
        if name not in _IF_GIVEN or given[name] is not None
    }
    settings |= {"model_kwargs": model_kwargs, "command": shlex.join(["robench", *sys.argv[1:]])}
    _TRAINERS[kind](settings)


def _kind(model: str) -> str:
    """Which trainer `model` gets: a sequence, text or language model's, else an image model's."""
    from robench.training.train_lm import trains_a_language_model
    from robench.training.train_sequence import trains_a_sequence_classifier
    from robench.training.train_text import trains_a_text_classifier

    tests = {
        "sequence": trains_a_sequence_classifier,
        "text": trains_a_text_classifier,
        "language": trains_a_language_model,
    }
    return next((kind for kind, test in tests.items() if test(model)), "image")


def _refuse_other_kinds_options(kind: str, given: dict[str, Any]) -> None:
    """One sentence for an option of another kind of model than `kind` (it would be ignored)."""
    from robench._core.errors import ConfigError

    model = given["model"]
    image_only = {"--noise-sd": given["noise_sd"], "--adversarial": given["adversarial"]}
    for flag in (flag for flag, value in image_only.items() if value):
        if kind != "image":
            raise ConfigError(
                f"{flag} trains on perturbed image pixels, and {model} is not an image "
                "model; leave it out."
            )
    if kind != "sequence" and given["lra_task"] is not None:
        raise ConfigError(
            f"--lra-task names the LRA task of a sequence classifier's data, and {model} is "
            "not a sequence classifier; leave it out, or train e.g. lra_transformer_nano."
        )
    if kind != "text" and given["init_from"] is not None:
        raise ConfigError(
            f"--init-from starts a text classifier from a language model, and {model} is not "
            "a text classifier; leave it out, or train e.g. switch_classifier_nano."
        )


def _refuse_overwriting_inputs(model: str, out_dir: Path, init_from: Path | None) -> None:
    """Refuse an --out-dir that cannot hold the checkpoints, or whose checkpoints would replace
    what the run starts from."""
    from robench._core.overwrite_guard import refuse_overwriting_inputs
    from robench.models.spec import bundled_cards, read_card
    from robench.results.report.schema import check_out_dir

    check_out_dir(out_dir)

    inputs: dict[str, Path | None] = {"--init-from": init_from}
    card = Path(model) if model.endswith(".toml") else bundled_cards().get(model)
    if card is not None and card.is_file():
        inputs["MODEL"] = card
        checkpoint = read_card(card).checkpoint
        if checkpoint is not None:
            inputs[f"the checkpoint of {model}"] = card.parent / checkpoint
    written = [("--out-dir", out_dir / name) for name in ("best.safetensors", "last.safetensors")]
    refuse_overwriting_inputs(written, inputs, "training")


def _train_image_model(settings: dict[str, Any]) -> None:
    from robench.training.train import TrainConfig, train

    result = train(TrainConfig(**settings), progress=_TrainBar())
    if not result.is_main:
        return
    typer.echo(
        f"best {result.metric_label} {100 * result.best_val:.2f}% after {result.steps} steps: "
        f"{result.best_path}"
    )


def _train_text_classifier(settings: dict[str, Any]) -> None:
    from robench.training.train_text import TextTrainConfig, train_text_classifier

    result = train_text_classifier(TextTrainConfig(**settings), progress=_TrainBar("texts/s"))
    typer.echo(
        f"best validation top-1 {100 * result.best_val:.2f}% (largest class "
        f"{100 * result.majority_share:.2f}%) after {result.steps} steps "
        f"({result.vocabulary_size} words, {len(result.classes)} classes): {result.best_path}"
    )


def _train_sequence_classifier(settings: dict[str, Any]) -> None:
    from robench.training.train_sequence import SequenceTrainConfig, train_sequence_classifier

    config = SequenceTrainConfig(**settings)
    result = train_sequence_classifier(config, progress=_TrainBar("seqs/s"))
    typer.echo(
        f"best validation top-1 {100 * result.best_val:.2f}% (largest class "
        f"{100 * result.majority_share:.2f}%) after {result.steps} steps "
        f"({len(result.classes)} classes): {result.best_path}"
    )


def _train_language_model(settings: dict[str, Any]) -> None:
    from robench.training.train_lm import LanguageTrainConfig, train_language_model

    settings["extra_words"] = tuple(settings["extra_words"] or ())
    if settings["val_limit"] == 2000:  # the image default: windows of a language model
        settings["val_limit"] = 200
    result = train_language_model(LanguageTrainConfig(**settings), progress=_TrainBar("tokens/s"))
    typer.echo(
        f"best validation perplexity {result.best_val:.2f} after {result.steps} "
        f"steps ({result.vocabulary_size} words in the vocabulary): {result.best_path}"
    )


# The trainer of each kind of model (`_kind`).
_TRAINERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "sequence": _train_sequence_classifier,
    "text": _train_text_classifier,
    "language": _train_language_model,
    "image": _train_image_model,
}
