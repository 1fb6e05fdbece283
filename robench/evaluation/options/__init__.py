"""The options of an evaluation, each defined once: one key of the TypedDicts below (its Python
keyword, its type, and an `EvalOption` inside `Annotated` with the rest). Every surface
derives from them (docs/architecture.md, "`evaluate`"); type checkers read the TypedDicts
(`**options: Unpack[EvalOptions]`) and `EVAL_OPTIONS` reads them at run time. Imports no torch
and no pydantic: `robench eval --help` is drawn from it.
"""

# No `from __future__ import annotations`: the TypedDicts' annotations are read at run time.

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from robench._core.units import parse_pixel_value
from robench.evaluation.options.eval_option import (
    COMMAND_LINE,
    DATA,
    DATA_OPTIONS,
    MODEL,
    OUTPUT,
    OVERRIDES,
    PLUGINS,
    SANITY,
    SPEED,
    SPEED_OPTIONS,
    SUITE,
    AppliesTo,
    EvalOption,
    options_of,
)

if TYPE_CHECKING:
    from torch.nn import Module as ModelObject
else:  # the TypedDicts' annotations are read at run time, without importing torch
    from robench.evaluation.options.eval_option import ModelObject

__all__ = ["EVAL_OPTIONS", "KEYWORDS", "EvalOptions", "EvalTarget", "plan_options"]


# The tasks whose inputs are images (robench/tasks: `Task.inputs == "images"`).
IMAGE_TASKS = ("image-classification", "semantic-segmentation")


def _names(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _pixels(value: float | str) -> float:
    return parse_pixel_value(value, "--sanity-eps")


def _workers(value: int | str) -> int | str:
    from robench.data.workers import check_workers

    return check_workers(value)


def _sanity_mode(value: str) -> str:
    from robench.evaluation.sanity.budget import check_mode

    return check_mode(value)


class EvalTarget(TypedDict, total=False):
    """What is evaluated: the model, the suite and the data (`robench eval MODEL -s -d`)."""

    model: Annotated[
        str | None,
        EvalOption(
            None,
            MODEL,
            "Registered model name (`robench list models`), a timm pretrained tag, "
            "hf:PATH_OR_REPO, hf-hub:ORG/NAME, local-dir:PATH (docs/models.md), a model card "
            "name or .toml path; optional when the checkpoint was written by `robench train`.",
            argument=True,
            in_plans=False,
        ),
    ]
    suite: Annotated[
        str,
        EvalOption(
            "smoke",
            SUITE,
            "Shipped suite name or path to a suite .toml.",
            short="-s",
            in_plans=False,
        ),
    ]
    data: Annotated[
        str | Mapping[str, str] | None,
        EvalOption(
            None,
            DATA,
            "Image folder, IDX directory, or `fashion-mnist` (built in; the default). "
            "Repeat as NAME=PATH for suites whose entries name their dataset; the first is "
            "the default.",
            short="-d",
            form="data",
        ),
    ]


class EvalOptions(TypedDict, total=False):
    """Every other option: `robench eval`'s flags, the Python API's keywords."""

    checkpoint: Annotated[
        Path | str | None,
        EvalOption(
            None,
            MODEL,
            ".safetensors, .pth, .pth.tar or .pt weights.",
            short="-c",
            in_plans=False,
            normalise=Path,
        ),
    ]
    ema: Annotated[bool, EvalOption(False, MODEL, "Use the checkpoint's EMA weights.")]
    num_classes: Annotated[
        int | None, EvalOption(None, MODEL, "Override the model's classes.", into=OVERRIDES)
    ]
    mean: Annotated[
        Sequence[float] | None,
        EvalOption(
            None,
            MODEL,
            "Per-channel mean, e.g. 0.485,0.456,0.406.",
            form="floats",
            into=OVERRIDES,
        ),
    ]
    std: Annotated[
        Sequence[float] | None,
        EvalOption(
            None,
            MODEL,
            "Per-channel std, e.g. 0.229,0.224,0.225.",
            form="floats",
            into=OVERRIDES,
        ),
    ]
    input_size: Annotated[
        Sequence[int] | None,
        EvalOption(None, MODEL, "Model input C,H,W, e.g. 3,224,224.", form="size", into=OVERRIDES),
    ]
    interpolation: Annotated[
        str | None, EvalOption(None, MODEL, "Resize interpolation.", into=OVERRIDES)
    ]
    crop_pct: Annotated[
        float | None, EvalOption(None, MODEL, "Center-crop fraction (0, 1].", into=OVERRIDES)
    ]
    model_kwargs: Annotated[
        Mapping[str, Any] | None,
        EvalOption(
            None,
            MODEL,
            'JSON model kwargs over the checkpoint\'s, e.g. \'{"m_estimator": "paper"}\'.',
            form="json",
            into=OVERRIDES,
        ),
    ]
    trust_checkpoint: Annotated[
        bool,
        EvalOption(
            False,
            MODEL,
            "Allow arbitrary pickles in the checkpoint (runs code: trusted files only).",
        ),
    ]
    trust_remote_code: Annotated[
        bool,
        EvalOption(
            False,
            MODEL,
            "Run the Python code a transformers model ships with it (auto_map; trusted "
            "models only).",
        ),
    ]
    allow_random_weights: Annotated[
        bool,
        EvalOption(
            False,
            MODEL,
            "Evaluate a model without a checkpoint (random weights; e.g. a pipeline test).",
        ),
    ]
    # From Python also an nn.Module held in memory (robench.evaluate wraps it as a model).
    surrogate: Annotated[
        str | ModelObject | None,
        EvalOption(
            None,
            MODEL,
            "Transfer attacks: craft the suite's attacks on this model (a MODEL as above) "
            "and score their images on MODEL; entries that name their own `surrogate` keep "
            "it. Its input size and classes must be MODEL's. Image suites with an attack "
            "entry only (not certification).",
            metavar="MODEL",
            applies_to=AppliesTo(IMAGE_TASKS, kinds="transferable"),
        ),
    ]
    surrogate_checkpoint: Annotated[
        Path | str | None,
        EvalOption(
            None,
            MODEL,
            "The surrogate's weights (default: its own, e.g. a model card's).",
            metavar="CKPT",
            normalise=Path,
        ),
    ]
    split: Annotated[
        str,
        EvalOption("test", DATA, "Split: test or train (IDX data); test, valid or train (text)."),
    ]
    class_map: Annotated[
        Path | str | None,
        EvalOption(
            None,
            DATA,
            "File with one class folder name per line; line number = index.",
            normalise=Path,
        ),
    ]
    limit: Annotated[
        int | None, EvalOption(None, DATA, "Evaluate a seeded random subset of N samples.")
    ]
    subset: Annotated[
        str | None,
        EvalOption(
            None,
            DATA,
            "Evaluate only the listed samples of the (default) dataset: a shipped subset "
            "(robustbench-imagenet-5000) or a file of file names or 0-based indices, one per "
            "line. Default: the suite's subset, else all. --limit then draws from it.",
        ),
    ]
    classes: Annotated[
        str | None,
        EvalOption(
            None,
            DATA,
            "Score only these classes of the (default) dataset: imagenet-a, imagenet-r "
            "or a file of ImageNet wnids, one per line (timm's --valid-labels). Only their "
            "images count, and the prediction is the argmax among their logits.",
        ),
    ]
    bad_images: Annotated[
        Literal["stop", "skip"],
        EvalOption(
            "stop",
            DATA,
            "An unreadable image (truncated, not an image, a decompression bomb): stop "
            "the run, or skip it (every sample is read once first; the skipped ones are left "
            "out of every perturbation and listed in the report).",
            metavar="stop|skip",
        ),
    ]
    allow_nonfinite: Annotated[
        bool,
        EvalOption(
            False,
            DATA,
            "Count samples whose data or model outputs (logits, losses) hold NaN or inf, "
            "instead of stopping the run at the first one (exit 2, naming the sample).",
        ),
    ]
    target_length: Annotated[
        int | None,
        EvalOption(
            None,
            DATA,
            "Language models: scored tokens per window (default: suite's, 256).",
            into=DATA_OPTIONS,
        ),
    ]
    context: Annotated[
        int | None,
        EvalOption(
            None,
            DATA,
            "Language models: unscored context tokens before each window (0).",
            into=DATA_OPTIONS,
        ),
    ]
    text_field: Annotated[
        str | None,
        EvalOption(
            None,
            DATA,
            "Text data: the text column of CSV, JSON lines, parquet or arrow data (language "
            'models: "text"; text classifiers: "sentence" for GLUE, else "text").',
            into=DATA_OPTIONS,
        ),
    ]
    label_field: Annotated[
        str | None,
        EvalOption(
            None,
            DATA,
            'Text classifiers: the label column of the data ("label").',
            into=DATA_OPTIONS,
        ),
    ]
    lra_task: Annotated[
        str | None,
        EvalOption(
            None,
            DATA,
            "Sequence classifiers: the LRA task of the data (listops, text, retrieval, image, "
            "pathfinder); default: the suite's, else the one the model was trained on.",
            into=DATA_OPTIONS,
        ),
    ]
    seed: Annotated[
        int, EvalOption(0, SUITE, "Seed of the subset and of every attack.", in_plans=False)
    ]
    target_halfwidth: Annotated[
        float | None,
        EvalOption(
            None,
            SUITE,
            "Sequential evaluation: samples in a seeded random order, stopped once every "
            "top1/top5 95% interval is at most +-H (an anytime-valid confidence sequence, "
            "docs/sequential.md); 0.01 = +-1 pp. Default: the suite's, else every sample.",
        ),
    ]
    sanity: Annotated[
        bool, EvalOption(False, SANITY, "Also run the sanity battery against gradient masking.")
    ]
    sanity_eps: Annotated[
        float | str | None,
        EvalOption(
            None,
            SANITY,
            "Budget of the sanity battery, e.g. 8/255.",
            form="pixels",
            normalise=_pixels,
        ),
    ]
    sanity_budget: Annotated[
        Literal["auto", "full", "quick"] | None,
        EvalOption(
            None,
            SANITY,
            "How hard the sanity battery tries: auto (at most 3x the suite's cost in "
            "model passes; the default), full (the literature-strength battery) or quick; "
            "docs/sanity.md lists the costs. Default: the suite's, else auto.",
            normalise=_sanity_mode,
        ),
    ]
    out: Annotated[
        Path | str | None,
        EvalOption(
            None,
            OUTPUT,
            "Report path. Default: MODEL__SUITE.json in runs/.",
            short="-o",
            in_plans=False,
            normalise=Path,
        ),
    ]
    resume: Annotated[
        bool,
        EvalOption(
            False, OUTPUT, "Continue an interrupted run of the same command.", in_plans=False
        ),
    ]
    overwrite: Annotated[
        bool,
        EvalOption(False, OUTPUT, "Discard an interrupted run's results.", in_plans=False),
    ]
    device: Annotated[
        str,
        EvalOption(
            "auto",
            SPEED,
            "auto (cuda when a GPU is available, else cpu), cpu, cuda or cuda:N; the report "
            "records the device used, with its name.",
        ),
    ]
    batch_size: Annotated[
        int, EvalOption(64, SPEED, "Samples per batch (attacks, scoring).", short="-b")
    ]
    workers: Annotated[
        int | str,
        EvalOption(
            "auto",
            SPEED,
            "Data-loading worker processes: auto (0 for in-memory and array data, min(8, "
            "CPUs) for image files), or a count; corruptions are computed in them (the "
            "results do not depend on the number).",
            form="count",
            normalise=_workers,
        ),
    ]
    amp: Annotated[
        Literal["bf16", "fp16"] | None,
        EvalOption(
            None,
            SPEED,
            "Score clean and corrupted inputs under autocast in this precision (attacks "
            "stay float32 unless the suite sets amp_attacks); recorded in the report.",
            form="choice",
            choices="robench.evaluation.speed:AMP_DTYPES",
            into=SPEED_OPTIONS,
        ),
    ]
    tf32: Annotated[
        bool,
        EvalOption(
            False,
            SPEED,
            "Let CUDA matrix products and convolutions round float32 to TF32 (faster on "
            "tensor-core GPUs, 10 mantissa bits); default: IEEE float32. Recorded in the report.",
            into=SPEED_OPTIONS,
        ),
    ]
    channels_last: Annotated[
        bool,
        EvalOption(
            False,
            SPEED,
            "Channels-last (NHWC) weights and image batches.",
            into=SPEED_OPTIONS,
        ),
    ]
    compile: Annotated[
        bool,
        EvalOption(
            False,
            SPEED,
            "torch.compile the model (every pass, attacks too).",
            into=SPEED_OPTIONS,
        ),
    ]
    imports: Annotated[
        Sequence[str],
        EvalOption(
            (),
            PLUGINS,
            "Module or .py file that registers models, perturbation kinds, metrics, "
            "tasks or datasets; loaded before the suite is read (repeatable).",
            flag="--import",
            form="repeated",
            normalise=_names,
        ),
    ]


class _CommandLineOnly(TypedDict, total=False):
    """Options of `robench eval` that only say how it prints (or, `--dry-run`, that it
    prints a plan instead of running)."""

    dry_run: Annotated[
        bool,
        EvalOption(
            False,
            OUTPUT,
            "Print each result's estimated model passes and the total (and, with a throughput "
            "a run on this device saved, the wall time), then stop: loads the model and data, "
            "attacks nothing, writes nothing (docs/cost.md).",
            into=COMMAND_LINE,
            in_plans=False,
        ),
    ]

    format: Annotated[
        str | None,
        EvalOption(
            None,
            OUTPUT,
            "Table on stdout (default: rich on a terminal, else markdown).",
            short="-f",
            form="choice",
            choices="robench.results.compare.tables:REPORT_FORMATS",
            into=COMMAND_LINE,
            in_plans=False,
        ),
    ]


# Every option, by Python keyword, in the order of the TypedDicts.
EVAL_OPTIONS: dict[str, EvalOption] = options_of(EvalTarget, EvalOptions, _CommandLineOnly)
# The keywords `request_from_options` takes: every option but the command line's own.
KEYWORDS = [name for name, option in EVAL_OPTIONS.items() if option.into != COMMAND_LINE]


def plan_options() -> dict[str, str]:
    """The options a sweep plan may set, by plan key, with the kind of value each takes."""
    return {o.plan_key: o.plan_kind for o in EVAL_OPTIONS.values() if o.in_plans}
