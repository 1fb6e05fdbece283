"""`robench eval`: evaluate one checkpoint under a suite of perturbations."""

from __future__ import annotations

import enum
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from robench._core.units import parse_pixel_value
from robench.cli._output import err, handle_errors, out, table_width
from robench.cli._parsing import dataset_map, float_list, input_size, json_object
from robench.cli._progress import make_progress
from robench.cli._ranges import check_range, checked_ranges
from robench.evaluation.speed import AMP_DTYPES, SpeedOptions
from robench.models.spec import spec_from_options
from robench.results.compare.tables import REPORT_FORMATS, markdown_fitting

OutputFormat = REPORT_FORMATS.choices("OutputFormat")
AmpMode = enum.Enum("AmpMode", {name: name for name in AMP_DTYPES}, type=str)  # type: ignore[misc]


def default_report_path(model: str | None, checkpoint: Path | None, suite: str) -> Path:
    # A source's name (hf:org/vit, local-dir:/models/x) keeps its last part, not the prefix.
    stem = Path(model.rsplit(":", 1)[-1]).stem if model else None
    stem = stem or (checkpoint.stem if checkpoint else "model")
    return Path("runs") / f"{stem}__{Path(suite).stem}.json"


@handle_errors
@checked_ranges
def eval_command(
    model: Annotated[
        str | None,
        typer.Argument(
            help="Registered model name (`robench list models`), a timm pretrained tag, "
            "hf:PATH_OR_REPO, hf-hub:ORG/NAME, local-dir:PATH (docs/models.md), a model card "
            "name or .toml path; optional when the checkpoint was written by `robench train`."
        ),
    ] = None,
    checkpoint: Annotated[
        Path | None,
        typer.Option("--checkpoint", "-c", help=".safetensors, .pth, .pth.tar or .pt weights."),
    ] = None,
    suite: Annotated[
        str, typer.Option("--suite", "-s", help="Shipped suite name or path to a suite .toml.")
    ] = "smoke",
    data: Annotated[
        list[str] | None,
        typer.Option(
            "--data",
            "-d",
            help="Image folder, IDX directory, or `fashion-mnist` (built in; the default). "
            "Repeat as NAME=PATH for suites whose entries name their dataset; the first is "
            "the default.",
        ),
    ] = None,
    split: Annotated[
        str, typer.Option(help="Split: test or train (IDX data); test, valid or train (text).")
    ] = "test",
    class_map: Annotated[
        Path | None,
        typer.Option(help="File with one class folder name per line; line number = index."),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="Evaluate a seeded random subset of N samples.")
    ] = None,
    subset: Annotated[
        str | None,
        typer.Option(
            help="Evaluate only the listed samples of the (default) dataset: a shipped subset "
            "(robustbench-imagenet-5000) or a file of file names or 0-based indices, one per "
            "line. Default: the suite's subset, else all. --limit then draws from it.",
        ),
    ] = None,
    classes: Annotated[
        str | None,
        typer.Option(
            help="Score only these classes of the (default) dataset: imagenet-a, imagenet-r "
            "or a file of ImageNet wnids, one per line (timm's --valid-labels). Only their "
            "images count, and the prediction is the argmax among their logits.",
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b")] = 64,
    seed: Annotated[int, typer.Option(help="Seed of the subset and of every attack.")] = 0,
    target_halfwidth: Annotated[
        float | None,
        typer.Option(
            help="Sequential evaluation: samples in a seeded random order, stopped once every "
            "top1/top5 95% interval is at most +-H (an anytime-valid confidence sequence, "
            "docs/sequential.md); 0.01 = +-1 pp. Default: the suite's, else every sample.",
        ),
    ] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda or cuda:N.")] = "cpu",
    workers: Annotated[
        int,
        typer.Option(
            help="Data-loading worker processes; corruptions are computed in them (the "
            "results do not depend on the number).",
        ),
    ] = 0,
    bad_images: Annotated[
        str,
        typer.Option(
            help="An unreadable image (truncated, not an image, a decompression bomb): stop "
            "the run, or skip it (every sample is read once first; the skipped ones are left "
            "out of every perturbation and listed in the report).",
            metavar="stop|skip",
        ),
    ] = "stop",
    out_path: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Report path. Default: MODEL__SUITE.json in runs/."),
    ] = None,
    imports: Annotated[
        list[str] | None,
        typer.Option(
            "--import",
            help="Module or .py file that registers models, perturbation kinds, metrics, "
            "tasks or datasets; loaded before the suite is read (repeatable).",
        ),
    ] = None,
    num_classes: Annotated[int | None, typer.Option(help="Override the model's classes.")] = None,
    mean: Annotated[
        str | None, typer.Option(help="Per-channel mean, e.g. 0.485,0.456,0.406.")
    ] = None,
    std: Annotated[
        str | None, typer.Option(help="Per-channel std, e.g. 0.229,0.224,0.225.")
    ] = None,
    input_size_text: Annotated[
        str | None, typer.Option("--input-size", help="Model input C,H,W, e.g. 3,224,224.")
    ] = None,
    interpolation: Annotated[str | None, typer.Option(help="Resize interpolation.")] = None,
    crop_pct: Annotated[float | None, typer.Option(help="Center-crop fraction (0, 1].")] = None,
    ema: Annotated[bool, typer.Option("--ema", help="Use the checkpoint's EMA weights.")] = False,
    trust_checkpoint: Annotated[
        bool,
        typer.Option(
            "--trust-checkpoint",
            help="Allow arbitrary pickles in the checkpoint (runs code: trusted files only).",
        ),
    ] = False,
    trust_remote_code: Annotated[
        bool,
        typer.Option(
            "--trust-remote-code",
            help="Run the Python code a transformers model ships with it (auto_map; trusted "
            "models only).",
        ),
    ] = False,
    allow_random_weights: Annotated[
        bool,
        typer.Option(
            "--allow-random-weights",
            help="Evaluate a model without a checkpoint (random weights; e.g. a pipeline test).",
        ),
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue an interrupted run of the same command.")
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Discard an interrupted run's results.")
    ] = False,
    sanity: Annotated[
        bool,
        typer.Option("--sanity", help="Also run the sanity battery against gradient masking."),
    ] = False,
    sanity_eps: Annotated[
        str | None, typer.Option(help="Budget of the sanity battery, e.g. 8/255.")
    ] = None,
    sanity_budget: Annotated[
        str | None,
        typer.Option(
            help="How hard the sanity battery tries: auto (at most 3x the suite's cost in "
            "model passes; the default), full (the literature-strength battery) or quick; "
            "docs/sanity.md lists the costs. Default: the suite's, else auto.",
        ),
    ] = None,
    model_kwargs: Annotated[
        str | None,
        typer.Option(
            help='JSON model kwargs over the checkpoint\'s, e.g. \'{"m_estimator": "paper"}\'.'
        ),
    ] = None,
    target_length: Annotated[
        int | None,
        typer.Option(help="Language models: scored tokens per window (default: suite's, 256)."),
    ] = None,
    context: Annotated[
        int | None,
        typer.Option(help="Language models: unscored context tokens before each window (0)."),
    ] = None,
    text_field: Annotated[
        str | None,
        typer.Option(
            help="Text data: the text column of CSV, JSON lines, parquet or arrow data (language "
            'models: "text"; text classifiers: "sentence" for GLUE, else "text").'
        ),
    ] = None,
    label_field: Annotated[
        str | None,
        typer.Option(help='Text classifiers: the label column of the data ("label").'),
    ] = None,
    amp: Annotated[
        AmpMode | None,  # type: ignore[valid-type]
        typer.Option(
            help="Score clean and corrupted inputs under autocast in this precision (attacks "
            "stay float32 unless the suite sets amp_attacks); recorded in the report.",
        ),
    ] = None,
    channels_last: Annotated[
        bool,
        typer.Option("--channels-last", help="Channels-last (NHWC) weights and image batches."),
    ] = False,
    compile_model: Annotated[
        bool,
        typer.Option("--compile", help="torch.compile the model (every pass, attacks too)."),
    ] = False,
    fmt: Annotated[
        OutputFormat | None,  # type: ignore[valid-type]
        typer.Option(
            "--format", "-f", help="Table on stdout (default: rich on a terminal, else markdown)."
        ),
    ] = None,
) -> None:
    """Evaluate one checkpoint under a suite; write a JSON report, print a table.

    Images reach every attack in pixel space ([0, 1]); normalisation is inside the model, so
    eps = 1/255 is one grey level. Per-sample results stream to REPORT.samples.jsonl, so an
    interrupted run continues with --resume.

    Examples:
      robench eval vit_nano_elliptical_fmnist --suite demo --limit 500
      robench eval -c runs/train/best.safetensors --suite smoke --limit 256
      robench eval vit_nano_elliptical_fmnist --suite smoke --target-halfwidth 0.05
      robench eval resnet18 -c resnet18.pth --data /data/cifar10/test \\
          --mean 0.49,0.48,0.45 --std 0.25,0.24,0.26 --input-size 3,32,32 \\
          --num-classes 10
      robench eval deit_tiny_elliptical_patch16_224 -c deit.pth \\
          -s paper-adversarial --data /data/imagenet/val --device cuda
      robench eval resnet50 -c resnet50.pth -s imagenet-c --data /data/imagenet-c \\
          --device cuda --amp bf16 --channels-last -b 256
      torchrun --nproc_per_node=4 -m robench eval vit_nano_fmnist -s demo
      robench eval hf-hub:timm/resnet50.a1_in1k -s imagenet-c --data /data/imagenet-c
      robench eval local-dir:/models/resnet18 --data /data/val --limit 500
      robench eval hf:/models/vit-base --data /data/images --limit 500
      robench eval transformer_lm_nano_elliptical_pydocs -s text-smoke --limit 50
      robench eval -c lm.safetensors -s wikitext-wordswap --data /data/wikitext-103
    """
    from robench.evaluation.interrupts import stop_cleanly
    from robench.evaluation.request import EvalRequest, evaluate
    from robench.evaluation.sanity_budget import check_mode

    # Options written as text, range-checked once read.
    mean_values, std_values = float_list(mean, "--mean"), float_list(std, "--std")
    size = input_size(input_size_text)
    eps = parse_pixel_value(sanity_eps, "--sanity-eps") if sanity_eps else None
    check_range("--mean", mean_values, mean)
    check_range("--std", std_values, std)
    check_range("--input-size", size, input_size_text)
    check_range("--sanity-eps", eps, sanity_eps)
    overrides = spec_from_options(
        {
            "num_classes": num_classes,
            "mean": mean_values,
            "std": std_values,
            "input_size": size,
            "interpolation": interpolation,
            "crop_pct": crop_pct,
            "model_kwargs": json_object(model_kwargs, "--model-kwargs"),
        }
    )
    data_options = {
        name: value
        for name, value in (
            ("target_length", target_length),
            ("context", context),
            ("text_field", text_field),
            ("label_field", label_field),
        )
        if value is not None
    }
    report_path = out_path or default_report_path(model, checkpoint, suite)
    request = EvalRequest(
        suite=suite,
        data=dataset_map(data) if data else None,
        out=report_path,
        model=model,
        checkpoint=checkpoint,
        split=split,
        class_map=class_map,
        limit=limit,
        subset=subset,
        classes=classes,
        batch_size=batch_size,
        seed=seed,
        target_halfwidth=target_halfwidth,
        device=device,
        workers=workers,
        bad_images=bad_images,
        imports=tuple(imports or ()),
        overrides=overrides,
        ema=ema,
        trust_checkpoint=trust_checkpoint,
        trust_remote_code=trust_remote_code,
        allow_random_weights=allow_random_weights,
        resume=resume,
        overwrite=overwrite,
        sanity=sanity,
        sanity_eps=eps,
        sanity_budget=check_mode(sanity_budget) if sanity_budget is not None else None,
        data_options=data_options,
        speed=SpeedOptions(
            amp=amp.value if amp is not None else None,
            channels_last=channels_last,
            compile=compile_model,
        ),
        command=["robench", *sys.argv[1:]],
    )
    progress = make_progress()
    with stop_cleanly(request.command, report_path):  # SIGINT/SIGTERM: exit 130/143
        report = evaluate(request, progress=progress)
    progress.close()
    if os.environ.get("RANK", "0") != "0":  # under torchrun only rank 0 reports
        return
    name = fmt.value if fmt is not None else ("rich" if out.is_terminal else "markdown")
    if name == "markdown" and (fmt is None or out.is_terminal):  # read there: fit its width
        rendered: object = markdown_fitting(report, table_width())
    else:
        rendered = REPORT_FORMATS.get(name)(report)
    if isinstance(rendered, str):
        typer.echo(rendered)
    else:
        out.print(rendered)
    err.print(f"report written to {report_path}", highlight=False)
