"""The task registry: names and descriptions without torch, implementations on demand."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from robench._core.lazy import LazyEntry
from robench._core.registry import Registry

if TYPE_CHECKING:
    from robench.tasks.base import Task


@dataclass(frozen=True)
class TaskEntry(LazyEntry):
    """A registered task: its name, its implementation ("package.module:Class", a `Task`
    subclass imported by `load()`) and one line for `robench list tasks`."""

    description: str
    # What a suite of this task reports when it names no metrics (results/stats/metrics.py).
    default_metrics: tuple[str, ...] = ()
    # What its models take: "images" (a network that names no task is asked this task; a
    # model object gets the normalisation layer), "tokens" (token ids, as they are) or "texts".
    inputs: str = "images"
    # The suite `robench.evaluate`'s default ("smoke") stands for on a model of this task;
    # None: "smoke" itself.
    smoke_suite: str | None = None
    # How `robench list models` describes a registered model of this task.
    model_label: str = ""


TASKS: Registry[TaskEntry] = Registry("task")


def register_task(
    name: str,
    description: str,
    implementation: str,
    default_metrics: tuple[str, ...],
    inputs: str = "images",
    *,
    smoke_suite: str | None = None,
    model_label: str = "",
) -> None:
    """Add a task; `implementation` is "package.module:Class" (a `tasks.base.Task` subclass
    built with no arguments), imported when a run first uses the task."""
    label = model_label or f"{name} model"
    TASKS.register(name)(
        TaskEntry(name, implementation, description, default_metrics, inputs, smoke_suite, label)
    )


@functools.cache
def load_task(name: str) -> Task:
    """The task `name`, built once (imports torch)."""
    task: Task = TASKS.get(name).load()()
    return task


register_task(
    "image-classification",
    "images in [0, 1] -> class logits; top-k accuracy and calibration (ECE, NLL, Brier) under "
    "attacks and corruptions",
    "robench.tasks.image_classification:ImageClassification",
    ("top1", "top5", "ece", "nll", "brier"),
    smoke_suite="smoke",
    model_label="image classifier",
)
register_task(
    "language-modeling",
    "token ids -> next-token logits; perplexity, word perplexity and bits per byte of a text "
    "corpus, clean and under Word Swap",
    "robench.tasks.language_modeling:LanguageModeling",
    ("perplexity", "word_perplexity", "bits_per_byte"),
    inputs="tokens",
    smoke_suite="text-smoke",
    model_label="robench language model",
)
register_task(
    "semantic-segmentation",
    "images in [0, 1] -> per-pixel class logits; mIoU, pixel and mean accuracy (as "
    "mmsegmentation) under attacks and corruptions",
    "robench.tasks.semantic_segmentation:SemanticSegmentation",
    ("miou", "pixel_accuracy", "mean_accuracy"),
    smoke_suite="segmentation-smoke",
    model_label="segmentation model",
)
register_task(
    "text-classification",
    "texts -> class logits; top-1 accuracy, clean and under adversarial word and character "
    "attacks (TextAttack's recipes), with attack success rate, queries and perturbed words",
    "robench.tasks.text_classification:TextClassification",
    (
        "top1",
        "attack_success_rate",
        "queries_mean",
        "queries_median",
        "perturbed_word_share",
        "ece",
        "nll",
        "brier",
    ),
    inputs="texts",
    smoke_suite="text-classification-smoke",
    model_label="robench text classifier",
)
register_task(
    "sequence-classification",
    "token or pixel sequences of up to several thousand positions (the Long Range Arena: "
    "ListOps, text, retrieval pairs, images, Pathfinder) -> class logits; top-1 accuracy, clean "
    "and under token substitution, pixel noise and occlusion",
    "robench.tasks.sequence_classification:SequenceClassification",
    ("top1",),
    inputs="tokens",
    smoke_suite="lra-smoke",
    model_label="robench LRA sequence classifier",
)
