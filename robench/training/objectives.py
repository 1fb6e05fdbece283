"""What `robench train` optimises and validates for each image task, once per task: the
training and validation data, the loss, the validation metric (higher is better) and how many
classes the network's output holds. `objective_for` picks one by the model's task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from robench._core.errors import ConfigError, DataError
from robench.data.segmentation.label_maps import IGNORE_INDEX, PAD_INDEX
from robench.perturbations.adversarial.pixel_loss import pixel_cross_entropy
from robench.results.stats.segmentation_metrics import dataset_metrics
from robench.tasks.registry import load_task
from robench.tasks.semantic_segmentation import collate_label_maps
from robench.training.loop import top1

if TYPE_CHECKING:
    from robench.models.loading import LoadedModel


@dataclass(frozen=True)
class ImageObjective:
    task: str
    metric: str  # the validation metric's name, e.g. "val_top1"; higher is better
    metric_label: str  # how `robench train` prints it, e.g. "val top-1"
    open_split: Callable[[str, LoadedModel, str], Any]  # (data, model, split) -> dataset
    loss: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]  # (out, y, smoothing)
    validate: Callable[[nn.Module, DataLoader, torch.device], float]
    output_classes: Callable[[torch.Tensor], int]  # the class axis' length of an output
    collate: Callable[[list[Any]], Any] | None = None  # None: the default collate


def _open_classification(data: str, loaded: LoadedModel, split: str) -> Any:
    from robench.data import open_dataset

    assert loaded.preprocessing is not None  # train.py refuses models without one
    return open_dataset(data, preprocessing=loaded.preprocessing, split=split)


CLASSIFICATION = ImageObjective(
    task="image-classification",
    metric="val_top1",
    metric_label="val top-1",
    open_split=_open_classification,
    loss=lambda logits, labels, smoothing: F.cross_entropy(
        logits, labels, label_smoothing=smoothing
    ),
    validate=top1,
    output_classes=lambda out: out.shape[-1],
)


def _open_segmentation(data: str, loaded: LoadedModel, split: str) -> Any:
    from robench.data.segmentation.layouts import NoSplits

    task = load_task("semantic-segmentation")
    settings: dict[str, Any] = {"layout": None, "class_map": None, "options": {}}
    try:
        dataset = task.open_data(data, loaded, split=split, **settings)
    except NoSplits:  # an images/ + masks/ folder: trained and validated on all its pairs
        dataset = task.open_data(data, loaded, split="test", **settings)
    if not hasattr(dataset, "ignore_index"):  # an image folder of classes, not of label maps
        raise DataError(
            f"{data} is not segmentation data; train a segmentation model on label maps "
            "(fashion-scenes, or an ADE20K, Cityscapes, VOC or images/+masks/ folder)."
        )
    return dataset


def _pixel_loss(logits: torch.Tensor, maps: torch.Tensor, smoothing: float) -> torch.Tensor:
    """Per-pixel cross-entropy at label resolution over the scored pixels (padding and the
    ignore index left out), as mmsegmentation's decode-head loss. Maps of one size (the
    built-in scenes) take one batched call; maps of several sizes, padded to the largest,
    each compare with their sample's logits resized to their own size (pixel_loss.py)."""
    if bool((maps == PAD_INDEX).any()):
        return pixel_cross_entropy(logits, maps, label_smoothing=smoothing)
    if logits.shape[-2:] != maps.shape[-2:]:
        logits = F.interpolate(logits, size=maps.shape[-2:], mode="bilinear", align_corners=False)
    return F.cross_entropy(logits, maps, ignore_index=IGNORE_INDEX, label_smoothing=smoothing)


def _miou(model: nn.Module, loader: DataLoader, device: torch.device) -> float:
    """mIoU over the validation images, by the task's own per-image counts."""
    task = load_task("semantic-segmentation")
    counts: list[list[int]] = []
    for images, maps in loader:
        counts += task.score(model, images.to(device), maps.to(device))["counts"]
    return dataset_metrics(torch.tensor(counts).numpy())["miou"]


SEGMENTATION = ImageObjective(
    task="semantic-segmentation",
    metric="val_miou",
    metric_label="val mIoU",
    open_split=_open_segmentation,
    loss=_pixel_loss,
    validate=_miou,
    output_classes=lambda out: out.shape[1],
    collate=collate_label_maps,
)

OBJECTIVES = {objective.task: objective for objective in (CLASSIFICATION, SEGMENTATION)}


def objective_for(loaded: LoadedModel, name: str) -> ImageObjective:
    """The objective of `loaded`'s task; one sentence for a task `robench train` cannot train."""
    objective = OBJECTIVES.get(loaded.task)
    if objective is None:
        raise ConfigError(
            f"{name} is a {loaded.task} model, which `robench train` cannot train; it trains "
            f"{', '.join(OBJECTIVES)} models and language models."
        )
    return objective
