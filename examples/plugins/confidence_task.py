"""A task from a plugin: `image-confidence`, an image classifier scored on how sure it is.

Image classification keeps each sample's label and top-5 classes; this task also keeps the
model's confidence (its largest softmax probability), and registers three metrics that read
it: `accuracy`, `confidence` (mean confidence) and `overconfidence` (mean confidence minus
accuracy: how far the model claims more than it delivers, the calibration gap). A suite asks
for it with `task = "image-confidence"`:

    name = "confidence"
    version = 1
    task = "image-confidence"

    [[perturbations]]
    kind = "clean"

    robench eval vit_nano_fmnist --suite confidence.toml \
        --import examples/plugins/confidence_task.py

and from Python, on a model held in memory (wrapped as the task's registration says: its
models read images):

    robench.evaluate(module, "confidence.toml", (images, labels), task="image-confidence",
                     imports=["examples/plugins/confidence_task.py"])

Everything task-specific lives in the `Task` subclass (here: image classification's data,
batches and checks, with a richer `score`); the runner, the sample store, the report and the
gate are unchanged. The task is registered by its "module:Class" path, built when a run first
uses it (a package that keeps the class in a module of its own lists the task without
importing torch; this one-file example imports it at once). Perturbation kinds name the
tasks they apply to, so a suite of this task takes `clean` and kinds that list it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import torch

from robench.registry import Metric, MetricDisplay, register_metric, register_task
from robench.tasks.image_classification import ImageClassification

TASK = "image-confidence"

register_task(
    TASK,
    "images in [0, 1] -> class logits; accuracy, mean confidence (largest softmax "
    "probability) and overconfidence (confidence minus accuracy)",
    f"{__name__}:ImageConfidence",
    ("accuracy", "confidence", "overconfidence"),
)

_PERCENT = {"scale": 100.0, "unit": "%", "diff_unit": "pp"}


def normal_interval(values: Sequence[Any]) -> tuple[float, float]:
    """95% normal-approximation interval of a mean of real values (Wilson's, robench's
    default, is for right/wrong values only)."""
    if len(values) < 2:
        return (-math.inf, math.inf)
    half = 1.959963984540054 * statistics.stdev(values) / math.sqrt(len(values))
    centre = statistics.fmean(values)
    return (centre - half, centre + half)


for metric in (
    Metric(
        name="accuracy",
        description="top-1 accuracy (fraction of samples)",
        higher_is_better=True,
        per_sample=lambda record: record["y"] == record["topk"][0],
        display=MetricDisplay("accuracy", **_PERCENT),  # type: ignore[arg-type]
        task=TASK,
        paired_test="binary",
    ),
    Metric(
        name="confidence",
        description="mean largest softmax probability",
        higher_is_better=True,
        per_sample=lambda record: float(record["confidence"]),
        display=MetricDisplay("confidence", **_PERCENT),  # type: ignore[arg-type]
        task=TASK,
        paired_test="real",  # paired bootstrap of the mean
        interval=normal_interval,
    ),
    Metric(
        name="overconfidence",
        description="mean confidence minus accuracy, the calibration gap (lower is better)",
        higher_is_better=False,
        per_sample=lambda record: float(record["confidence"]) - (record["y"] == record["topk"][0]),
        display=MetricDisplay("overconfidence", **_PERCENT),  # type: ignore[arg-type]
        task=TASK,
        paired_test="real",
        interval=normal_interval,
    ),
):
    register_metric(metric)


class ImageConfidence(ImageClassification):
    name = TASK

    def open_data(self, *args: Any, **kwargs: Any) -> Any:
        dataset = super().open_data(*args, **kwargs)
        dataset.task = TASK  # the data says which task it is for; evaluate checks it
        return dataset

    def score(self, model: Any, inputs: Any, targets: Any) -> dict[str, list[Any]]:
        with torch.inference_mode():
            logits = model(inputs)
        confidence = logits.softmax(dim=-1).amax(dim=-1)
        return {
            "y": targets.tolist(),
            "topk": logits.topk(min(5, logits.shape[-1]), dim=-1).indices.tolist(),
            "confidence": confidence.tolist(),
        }
