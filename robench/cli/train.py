"""`robench train`: small-scale training of a registered image classifier."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from robench._core.errors import ConfigError
from robench.cli._output import err, handle_errors


class _TrainBar:
    def __init__(self) -> None:
        self._progress = Progress(
            TextColumn("train"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} steps"),
            TextColumn("loss {task.fields[loss]:.4f}"),
            TextColumn("{task.fields[rate]:.0f} img/s"),
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
def train_command(
    model: Annotated[str, typer.Argument(help="Registered model name, e.g. vit_nano_patch4_28.")],
    data: Annotated[
        str, typer.Option("--data", "-d", help="Image folder, IDX dir or fashion-mnist.")
    ] = "fashion-mnist",
    out_dir: Annotated[Path, typer.Option("--out-dir", "-o", help="Where checkpoints go.")] = Path(
        "runs/train"
    ),
    epochs: Annotated[float, typer.Option(help="Passes over the training data.")] = 1.0,
    max_steps: Annotated[int | None, typer.Option(help="Stop after N optimiser steps.")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b")] = 128,
    lr: Annotated[float, typer.Option(help="Peak AdamW learning rate.")] = 1e-3,
    weight_decay: Annotated[
        float, typer.Option(help="AdamW weight decay (not on biases/norms).")
    ] = 0.05,
    warmup_steps: Annotated[
        int, typer.Option(help="Linear warm-up steps before cosine decay.")
    ] = 100,
    label_smoothing: Annotated[float, typer.Option(help="Cross-entropy label smoothing.")] = 0.1,
    clip_grad: Annotated[float | None, typer.Option(help="Max gradient norm (none: off).")] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed of initialisation, shuffling and subsets.")] = 0,
    device: Annotated[str, typer.Option(help="cpu, cuda or cuda:N.")] = "cpu",
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
) -> None:
    """Train a registered image classifier; keep the best checkpoint as .safetensors.

    The checkpoint stores the model name, kwargs, normalisation, input size and class names,
    so `robench eval -c OUT_DIR/best.safetensors` needs nothing else. Under torchrun it uses
    DistributedDataParallel. For ImageNet-scale runs use timm's train.py (see README).

    Examples:
      robench train vit_nano_elliptical_patch4_28 --epochs 10 -o runs/nano-ell
      robench train vit_nano_patch4_28 --max-steps 50 --train-limit 2000 -o /tmp/q
      torchrun --nproc_per_node=2 -m robench train vit_nano_patch4_28 --epochs 1
    """
    from robench.training.train import TrainConfig, train

    try:
        kwargs = json.loads(model_kwargs) if model_kwargs else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"--model-kwargs is not valid JSON ({exc}); e.g. '{{\"delta\": 1.0}}'."
        ) from None
    if not isinstance(kwargs, dict):
        raise ConfigError("--model-kwargs must be a JSON object, e.g. '{\"delta\": 1.0}'.")
    config = TrainConfig(
        model=model,
        data=data,
        out_dir=out_dir,
        epochs=epochs,
        max_steps=max_steps,
        batch_size=batch_size,
        lr=lr,
        weight_decay=weight_decay,
        warmup_steps=warmup_steps,
        label_smoothing=label_smoothing,
        clip_grad=clip_grad,
        seed=seed,
        device=device,
        train_limit=train_limit,
        val_limit=val_limit,
        val_every=val_every,
        workers=workers,
        model_kwargs=kwargs,
        command=shlex.join(["robench", *sys.argv[1:]]),
    )
    result = train(config, progress=_TrainBar())
    if not result.is_main:
        return
    typer.echo(
        f"best val top-1 {100 * result.best_val_top1:.2f}% after {result.steps} steps: "
        f"{result.best_path}"
    )
