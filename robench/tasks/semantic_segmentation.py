"""Semantic segmentation: images in [0, 1] -> per-pixel class logits, scored by pixel counts.

A batch is (images (B, C, H, W) in [0, 1], label maps (B, Hl, Wl)): classes 0..K-1,
`IGNORE_INDEX` for pixels no class is scored on and `PAD_INDEX` outside a smaller map
(robench/data/segmentation/label_maps.py). Each sample's logits (B, K, h, w) are resized to its
map's size, as mmsegmentation compares them; the record and the metrics read from it:
docs/segmentation.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn
from torch.utils.data import Dataset

from robench._core.errors import DataError
from robench.data.segmentation.label_maps import (
    IGNORE_INDEX,
    PAD_INDEX,
    label_sizes,
    logits_at_labels,
    pad_label_maps,
    scored_pixels,
)
from robench.models.checks import train_mode_warnings
from robench.results.stats.segmentation_metrics import batch_pixel_counts, pixel_counts
from robench.tasks.base import Columns, DataRequest, ModelCheck, Record, Task
from robench.tasks.finite_values import require_finite
from robench.tasks.pixel_inputs import PixelInputs

if TYPE_CHECKING:
    from robench.data.in_memory import InMemory
    from robench.models.loading import LoadedModel

BUILTIN_SCENES = "fashion-scenes"  # robench/data/segmentation/scenes.py


def collate_label_maps(
    items: list[tuple[torch.Tensor, torch.Tensor]],
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of (image, label map) pairs: stacked images, maps padded to the largest."""
    images, maps = zip(*items, strict=True)
    return torch.stack(images), pad_label_maps(maps)


def predicted_maps(
    logits: torch.Tensor, targets: torch.Tensor, sizes: list[tuple[int, int]] | None = None
) -> torch.Tensor | list[torch.Tensor]:
    """Each sample's predicted classes (Hl, Wl) at its label map's size: one (B, H, W)
    tensor when every map has the logits' size and no padding, else a list.

    Measured on CPU (torch 2.14, 2 threads, (32, 11, 64, 64) logits): `argmax(0)` image by
    image took ~15 ms per image, as long as the model; one reduction over the batch takes
    ~10 ms per 32 images, so maps of the logits' size without padding (the common case) are
    reduced at once. `max(dim).indices` has argmax's first-maximum rule and was never slower
    (on some inputs 6x faster)."""
    if targets.shape[-2:] == logits.shape[-2:] and not bool((targets == PAD_INDEX).any()):
        return logits.max(dim=1).indices
    return [sample.max(dim=0).indices for sample in logits_at_labels(logits, targets, sizes)]


def _check_takes_rgb(model: LoadedModel, input_size: tuple[int, ...]) -> None:
    """Segmentation images are RGB: a model for other images cannot run on them. Said
    before the first batch, and as what it is when the model is an image classifier (its
    outputs on its own input size are one row of class scores)."""
    channels = input_size[0]
    if channels == 3:
        return
    shape = _output_shape(model.model, input_size)
    if shape is not None and len(shape) == 2:
        raise DataError(
            f"{model.name} is an image classifier ({channels}-channel images in, {shape[1]} "
            "class scores out), not a segmentation model; pick a segmentation model for a "
            "segmentation suite (`robench list models 'segmenter*'`), or a classification "
            "suite for it (e.g. smoke)."
        )
    raise DataError(
        f"{model.name} takes {channels}-channel images but segmentation data is RGB; pick a "
        "segmentation model for RGB images, or check the model card's input_size."
    )


def _output_shape(network: nn.Module, input_size: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape of `network`'s outputs on one blank image of its own size; None when it
    does not run on it (the caller then reports the channels alone)."""
    weight = next(iter(network.parameters()), None)
    device = weight.device if weight is not None else torch.device("cpu")
    try:
        with torch.no_grad():
            outputs = network(torch.zeros(1, *input_size, device=device))
    except Exception:  # any failure of a foreign model means: no shape to tell
        return None
    return tuple(outputs.shape) if isinstance(outputs, torch.Tensor) else None


class SemanticSegmentation(PixelInputs, Task):
    name = "semantic-segmentation"
    default_data: ClassVar[str] = BUILTIN_SCENES
    logits: ClassVar[tuple[int, str]] = (4, "(batch, classes, height, width)")

    def read_data(self, path: str | InMemory, model: LoadedModel, request: DataRequest) -> Any:
        from robench.data.in_memory import InMemory, InMemorySegmentation
        from robench.data.segmentation.layouts import open_segmentation_dataset
        from robench.data.segmentation.scenes import FashionScenes
        from robench.tasks.image_classification import class_names

        if request.class_map is not None:
            raise DataError(
                "--class-map maps image classes, not segmentation labels; leave it out and "
                "pass data labelled with the model's classes."
            )
        assert model.preprocessing is not None  # every image model resolves one
        _check_takes_rgb(model, tuple(model.preprocessing.input_size))
        size = tuple(model.preprocessing.input_size[1:])
        split, layout = request.split, request.layout
        dataset: Any
        if isinstance(path, InMemory):  # robench.evaluate(data=...): items held in memory
            dataset = InMemorySegmentation(path, model.preprocessing, class_names(path, model))
        elif path == BUILTIN_SCENES:
            dataset = FashionScenes(split=split, image_size=size)  # type: ignore[arg-type]
        else:
            # "test" is robench's default split; the layouts' own defaults are their labelled
            # evaluation splits (ADE20K and Cityscapes "validation"/"val": test has no labels).
            chosen = None if split == "test" else split
            dataset = open_segmentation_dataset(path, layout, chosen, size)  # type: ignore[arg-type]
        # What the report and the engine read of every dataset (robench/data/labeled.py).
        dataset.task = self.name
        dataset.label_space = None
        dataset.preprocessing_note = (
            f"images resized to {size[0]}x{size[1]} (bilinear); label maps kept at their own "
            "resolution, logits resized to them (bilinear)"
        )
        dataset.class_index_note = "label values are positions in the dataset's class list"
        dataset.output_classes = None  # every class the model predicts is scored
        return dataset

    def collate(self, dataset: Dataset) -> Callable[[list[Any]], Any]:
        return collate_label_maps

    def score(self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> Columns:
        with torch.inference_mode():
            logits = model(inputs)
            require_finite(logits, "segmentation logits")
            predictions = predicted_maps(logits, targets)
        n_classes = logits.shape[1]
        if isinstance(predictions, torch.Tensor):  # one size: the batch's counts at once
            found = batch_pixel_counts(predictions.cpu(), targets.cpu(), n_classes)
            return {"counts": found.reshape(len(found), -1).tolist()}
        counts = []
        sizes = label_sizes(targets)
        for pred, label_map, size in zip(predictions, targets.cpu(), sizes, strict=True):
            labels = scored_pixels(label_map, size)
            counts.append(pixel_counts(pred.cpu(), labels, n_classes).reshape(-1).tolist())
        return {"counts": counts}

    def target(self, record: Record) -> Any:
        return None  # label maps are too large for the report; the counts hold the outcome

    def outputs(self, record: Record) -> dict[str, Any]:
        return {}

    def check_data(
        self, dataset: Dataset, model: nn.Module, inputs: torch.Tensor, *, mapped: bool
    ) -> None:
        """The model must predict per pixel, one channel per class of the data."""
        with torch.no_grad():
            # Two samples, the shape check_model runs next: one first-call warm-up, not two.
            logits = model(inputs[:2])
        n_classes = len(getattr(dataset, "classes", ()))
        if logits.dim() != 4:
            shape = tuple(logits.shape)
            found = (
                f"is an image classifier (outputs {shape}: class scores per image)"
                if logits.dim() == 2
                else f"returns outputs of shape {shape}"
            )
            raise DataError(
                f"the model {found}, not per-pixel logits (B, K, H, W); a segmentation suite "
                "needs a segmentation model (see `robench list models 'segmenter*'`)."
            )
        if logits.shape[1] != n_classes:
            raise DataError(
                f"the data has {n_classes} classes but the model predicts {logits.shape[1]}; "
                f"pass a model with {n_classes} classes (a registered one built with "
                f"--num-classes {n_classes}, a transformers one with num_labels={n_classes})."
            )

    def check_model(
        self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, *, gradients: bool
    ) -> ModelCheck:
        warnings = train_mode_warnings(model)
        with torch.inference_mode():
            first, second = model(inputs[:2]), model(inputs[:2])
        randomized = not torch.equal(first, second)
        if randomized:
            warnings.append(
                "the model is randomized (two forward passes on the same input differ): "
                "single-sample attacks overestimate its robustness."
            )
        if not torch.isfinite(first).all():
            warnings.append("the model's logits are not all finite on clean inputs.")
        scored = (targets != IGNORE_INDEX) & (targets != PAD_INDEX)
        if not scored.any():
            warnings.append("the first batch has no scored pixel (all ignored).")
        return ModelCheck(randomized=randomized, warnings=warnings)
