"""`robench train`: small-scale training of a registered image classifier, segmenter, language
model, text classifier or LRA sequence classifier."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from robench.cli._output import err, handle_errors
from robench.cli._parsing import json_object
from robench.cli._ranges import checked_ranges


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


@handle_errors
@checked_ranges
def train_command(  # long: 90 lines of typer options, 21 of help; 73 of code
    model: Annotated[
        str,
        typer.Argument(
            help="Registered model name (trained from scratch), e.g. vit_nano_patch4_28, or a "
            "model card (fine-tuned from its checkpoint), e.g. transformer_lm_nano_pydocs."
        ),
    ],
    data: Annotated[
        str | None,
        typer.Option(
            "--data",
            "-d",
            help="Image folder, IDX dir or fashion-mnist (default); for a segmentation model "
            "fashion-scenes (default) or an ADE20K / Cityscapes / VOC / images+masks folder; "
            "for a language model a text corpus (WikiText dir, text files) or python-docs "
            "(default) / pydoc-topics; for a text classifier labelled texts (GLUE SST-2 dir, "
            "csv / jsonl / parquet / arrow) or python-docs-sections (default).",
        ),
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out-dir", "-o", help="Where checkpoints go.")] = Path(
        "runs/train"
    ),
    epochs: Annotated[float, typer.Option(help="Passes over the training data.")] = 1.0,
    max_steps: Annotated[int | None, typer.Option(help="Stop after N optimiser steps.")] = None,
    batch_size: Annotated[
        int | None, typer.Option("--batch-size", "-b", help="Default 128 images / 16 sequences.")
    ] = None,
    lr: Annotated[
        float | None,
        typer.Option(
            help="Peak learning rate (default: AdamW 1e-3; language models: Adam 2.5e-4)."
        ),
    ] = None,
    weight_decay: Annotated[
        float | None,
        typer.Option(
            help="AdamW weight decay, not on biases/norms (default 0.05; sequence classifiers 0)."
        ),
    ] = None,
    warmup_steps: Annotated[
        int, typer.Option(help="Linear warm-up steps before cosine decay.")
    ] = 100,
    label_smoothing: Annotated[
        float | None,
        typer.Option(help="Cross-entropy label smoothing (default 0.1; sequence classifiers 0)."),
    ] = None,
    clip_grad: Annotated[float, typer.Option(help="Max gradient norm (0: off).")] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of initialisation, shuffling and subsets.")] = 0,
    device: Annotated[
        str,
        typer.Option(help="auto (cuda when a GPU is available, else cpu), cpu, cuda or cuda:N."),
    ] = "auto",
    train_limit: Annotated[
        int | None, typer.Option(help="Train on a seeded subset of N images.")
    ] = None,
    val_limit: Annotated[
        int | None, typer.Option(help="Validate on a seeded subset of N images.")
    ] = 2000,
    val_every: Annotated[int, typer.Option(help="Steps between validations.")] = 200,
    workers: Annotated[int, typer.Option(help="Data-loading worker processes.")] = 0,
    model_kwargs: Annotated[
        str | None, typer.Option(help='JSON model kwargs, e.g. \'{"estimator": "random"}\'.')
    ] = None,
    target_length: Annotated[
        int, typer.Option(help="Language models: tokens per training sequence.")
    ] = 256,
    vocab_min_count: Annotated[
        int, typer.Option(help="Language models: keep words seen at least N times in train.")
    ] = 3,
    vocab_size: Annotated[
        int | None, typer.Option(help="Language models: at most N vocabulary words.")
    ] = None,
    init_from: Annotated[
        Path | None,
        typer.Option(
            help="Text classifiers: start from this language model checkpoint's backbone and "
            "vocabulary (e.g. a switch_lm_nano best.safetensors for switch_classifier_nano)."
        ),
    ] = None,
    aux_loss_weight: Annotated[
        float,
        typer.Option(help="Mixture-of-experts models: weight of the load-balancing loss (0: off)."),
    ] = 0.01,
    noise_sd: Annotated[
        float,
        typer.Option(
            help="Image models: std of Gaussian noise added to every training and validation "
            "image's pixels (0-1 scale), as Cohen et al. train for randomized smoothing; 0: off."
        ),
    ] = 0.0,
    adversarial: Annotated[
        str | None,
        typer.Option(
            help="Image classifiers: adversarial training, pgd (Madry et al. 2018) or trades "
            "(Zhang et al. 2019), against an L-inf attack of --eps; validated clean and under "
            "PGD at --eps, the most robust checkpoint kept."
        ),
    ] = None,
    eps: Annotated[
        float | None,
        typer.Option(help="--adversarial: the attack's L-inf radius in pixel units, e.g. 0.1."),
    ] = None,
    steps: Annotated[
        int | None, typer.Option(help="--adversarial: the attack's steps per example (10).")
    ] = None,
    step_size: Annotated[
        float | None,
        typer.Option(help="--adversarial: the attack's step size (default 2.5 * eps / steps)."),
    ] = None,
    beta: Annotated[
        float | None,
        typer.Option(help="--adversarial trades: weight of the KL term (default 6)."),
    ] = None,
    lra_task: Annotated[
        str | None,
        typer.Option(
            help="Sequence classifiers: the LRA task of --data (listops, text, retrieval, "
            "image, pathfinder)."
        ),
    ] = None,
    extra_word: Annotated[
        list[str] | None,
        typer.Option(
            help="Language models: add this word to the vocabulary though training never "
            "shows it, e.g. Word Swap's AAA (repeatable)."
        ),
    ] = None,
) -> None:
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
    from robench._core.errors import ConfigError
    from robench._core.plugins import load_plugins
    from robench.training.adversarial import refuse_stray_options
    from robench.training.train_lm import trains_a_language_model
    from robench.training.train_sequence import trains_a_sequence_classifier
    from robench.training.train_text import trains_a_text_classifier

    kwargs = json_object(model_kwargs, "--model-kwargs")
    _refuse_overwriting_inputs(model, out_dir, init_from)
    command = shlex.join(["robench", *sys.argv[1:]])
    load_plugins(())
    shared: dict[str, Any] = {  # what both trainers take (training/loop.py TrainSettings)
        "model": model,
        "out_dir": out_dir,
        "epochs": epochs,
        "max_steps": max_steps,
        "warmup_steps": warmup_steps,
        "clip_grad": clip_grad,
        "seed": seed,
        "device": device,
        "val_limit": val_limit,
        "val_every": val_every,
        "model_kwargs": kwargs,
        "command": command,
    }
    # Options left out take the trainer's own default (an image's or a language model's).
    optional = {"data": data, "batch_size": batch_size, "lr": lr}
    shared |= {name: value for name, value in optional.items() if value is not None}
    if adversarial is None:
        refuse_stray_options(eps, steps, step_size, beta)
    image_only = {"--noise-sd": noise_sd, "--adversarial": adversarial}
    for flag in (flag for flag, value in image_only.items() if value):
        if (
            trains_a_text_classifier(model)
            or trains_a_language_model(model)
            or trains_a_sequence_classifier(model)
        ):
            raise ConfigError(
                f"{flag} trains on perturbed image pixels, and {model} is not an image "
                "model; leave it out."
            )
    # Losses and regularisation of the classifiers' trainers, their own defaults when not given.
    given = {"weight_decay": weight_decay, "label_smoothing": label_smoothing}
    tuning: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
    if trains_a_sequence_classifier(model):
        _train_sequence_classifier(
            **shared,
            lra_task=lra_task,
            **tuning,
            train_limit=train_limit,
            workers=workers,
        )
        return
    if lra_task is not None:
        raise ConfigError(
            f"--lra-task names the LRA task of a sequence classifier's data, and {model} is "
            "not a sequence classifier; leave it out, or train e.g. lra_transformer_nano."
        )
    if trains_a_text_classifier(model):
        _train_text_classifier(
            **shared,
            **tuning,
            train_limit=train_limit,
            vocab_min_count=vocab_min_count,
            vocab_size=vocab_size,
            init_from=init_from,
            aux_loss_weight=aux_loss_weight,
        )
        return
    if init_from is not None:
        raise ConfigError(
            f"--init-from starts a text classifier from a language model, and {model} is not "
            "a text classifier; leave it out, or train e.g. switch_classifier_nano."
        )
    if trains_a_language_model(model):  # a registered language model or a card of one
        _train_language_model(
            **shared,
            target_length=target_length,
            vocab_min_count=vocab_min_count,
            vocab_size=vocab_size,
            extra_words=tuple(extra_word or ()),
            aux_loss_weight=aux_loss_weight,
        )
        return
    from robench.training.train import TrainConfig, train

    config = TrainConfig(
        **shared,
        **tuning,
        train_limit=train_limit,
        workers=workers,
        noise_sd=noise_sd,
        adversarial=adversarial,
        eps=eps,
        attack_steps=steps,
        step_size=step_size,
        beta=beta,
    )
    result = train(config, progress=_TrainBar())
    if not result.is_main:
        return
    typer.echo(
        f"best {result.metric_label} {100 * result.best_val:.2f}% after {result.steps} steps: "
        f"{result.best_path}"
    )


def _refuse_overwriting_inputs(model: str, out_dir: Path, init_from: Path | None) -> None:
    """Refuse an --out-dir whose checkpoints would replace what the run starts from (the
    card's checkpoint, --init-from)."""
    from robench._core.overwrite_guard import refuse_overwriting_inputs
    from robench.models.spec import bundled_cards, read_card

    inputs: dict[str, Path | None] = {"--init-from": init_from}
    card = Path(model) if model.endswith(".toml") else bundled_cards().get(model)
    if card is not None and card.is_file():
        inputs["MODEL"] = card
        checkpoint = read_card(card).checkpoint
        if checkpoint is not None:
            inputs[f"the checkpoint of {model}"] = card.parent / checkpoint
    written = [("--out-dir", out_dir / name) for name in ("best.safetensors", "last.safetensors")]
    refuse_overwriting_inputs(written, inputs, "training")


def _train_text_classifier(**settings: Any) -> None:
    from robench.training.train_text import TextTrainConfig, train_text_classifier

    result = train_text_classifier(TextTrainConfig(**settings), progress=_TrainBar("texts/s"))
    typer.echo(
        f"best validation top-1 {100 * result.best_val_top1:.2f}% (largest class "
        f"{100 * result.majority_share:.2f}%) after {result.steps} steps "
        f"({result.vocabulary_size} words, {len(result.classes)} classes): {result.best_path}"
    )


def _train_sequence_classifier(**settings: Any) -> None:
    from robench.training.train_sequence import SequenceTrainConfig, train_sequence_classifier

    config = SequenceTrainConfig(**settings)
    result = train_sequence_classifier(config, progress=_TrainBar("seqs/s"))
    typer.echo(
        f"best validation top-1 {100 * result.best_val_top1:.2f}% (largest class "
        f"{100 * result.majority_share:.2f}%) after {result.steps} steps "
        f"({len(result.classes)} classes): {result.best_path}"
    )


def _train_language_model(**settings: Any) -> None:
    from robench.training.train_lm import LanguageTrainConfig, train_language_model

    if settings["val_limit"] == 2000:  # the image default: windows of a language model
        settings["val_limit"] = 200
    result = train_language_model(LanguageTrainConfig(**settings), progress=_TrainBar("tokens/s"))
    typer.echo(
        f"best validation perplexity {result.best_val_perplexity:.2f} after {result.steps} "
        f"steps ({result.vocabulary_size} words in the vocabulary): {result.best_path}"
    )
