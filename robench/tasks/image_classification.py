"""Image classification: images in [0, 1] -> class logits, scored by their top-k classes (the
record of tasks/top_k_records.py; the report keeps the top-1 class as `prediction`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.utils.data import Dataset

from robench._core.errors import DataError
from robench.models.checks import check_model
from robench.models.restricted import restrict_outputs
from robench.tasks.base import DataRequest, ModelCheck, Task, TaskData
from robench.tasks.pixel_inputs import PixelInputs
from robench.tasks.top_k_records import TopKRecords

if TYPE_CHECKING:
    from robench.data.in_memory import InMemory
    from robench.models.loading import LoadedModel


class ImageClassification(TopKRecords, PixelInputs, Task):
    name = "image-classification"

    def read_data(self, path: str | InMemory, model: LoadedModel, request: DataRequest) -> Any:
        from robench.data import open_dataset
        from robench.data.in_memory import InMemory, InMemoryImages

        assert model.preprocessing is not None  # every image model resolves one
        if isinstance(path, InMemory):  # robench.evaluate(data=...): items held in memory
            return InMemoryImages(path, model.preprocessing, class_names(path, model))
        split, layout, class_map = request.split, request.layout, request.class_map
        dataset = open_dataset(
            path, preprocessing=model.preprocessing, split=split, class_map=class_map, layout=layout
        )
        by_name = self._class_map_by_name(dataset, model) if class_map is None else None
        if by_name is None:
            return dataset
        return open_dataset(
            path, preprocessing=model.preprocessing, split=split, class_map=by_name, layout=layout
        )

    @staticmethod
    def _class_map_by_name(dataset: Any, model: LoadedModel) -> Any:
        """A class map from a sourced model's own labels (id2label, timm's label_names) when
        the image folder's class names match them and their order differs; else None."""
        from robench.data.class_map import class_map_from_labels

        labels = model.spec.classes
        if model.origin is None or not labels or dataset.kind != "image-folder":
            return None
        if list(dataset.classes) == list(labels):
            return None
        return class_map_from_labels(list(dataset.classes), labels, f"{model.name} labels")

    def check_data(
        self, dataset: Dataset, model: nn.Module, inputs: torch.Tensor, *, mapped: bool
    ) -> None:
        """Label indices must mean the model's classes: equal counts, or a class map."""
        n_classes = len(getattr(dataset, "classes", ()))
        with torch.no_grad():
            n_outputs = model(inputs[:1]).shape[-1]
        if n_classes > n_outputs or (n_classes != n_outputs and not mapped):
            raise DataError(
                f"the data has {n_classes} classes but the model predicts {n_outputs}; pass a "
                f"checkpoint trained on this data, --num-classes {n_classes} with weights that "
                "match it, or a --class-map that places the data's classes among the model's."
            )

    def check_model(
        self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, *, gradients: bool
    ) -> ModelCheck:
        found = check_model(model, inputs, targets, gradients=gradients)
        return ModelCheck(found.randomized, found.bad_gradient_share, found.warnings)

    def restrict_to_classes(self, dataset: Any, classes: str) -> TaskData:
        """The data's samples of the listed ImageNet wnids (a shipped list such as
        "imagenet-a", or a file), labelled by their position in the list."""
        from robench.data.label_space import read_label_space
        from robench.data.label_space_view import restrict_to_label_space

        view: TaskData = restrict_to_label_space(dataset, read_label_space(classes))
        return view

    def restrict_outputs(self, model: nn.Module, output_classes: Sequence[int] | None) -> nn.Module:
        """The logits cut to `output_classes` (class axis last), so the argmax, the top-5
        and every attack's loss are taken among them (models/restricted.py)."""
        return restrict_outputs(model, output_classes)

    def label_space_protocol(self, classes: int) -> str:
        return (
            f"the model's logits are restricted to the {classes} listed classes and the "
            "prediction is the argmax among them"
        )

    def adaptation_note(self, dataset: Dataset, model_inputs: Any) -> str | None:
        """Grayscale data for an RGB model (or the reverse) is converted; say so."""
        stored = getattr(dataset, "native_channels", None)
        channels = model_inputs.channels
        if stored is None or stored == channels:
            return None
        how = "replicated to 3 channels" if channels == 3 else "converted to 1 channel (luminance)"
        return (
            f"adapted input: the data's {stored}-channel images are {how} for a model that "
            f"takes {channels} channels."
        )


def class_names(data: InMemory, model: LoadedModel) -> list[str]:
    """The classes of in-memory data: its own names, else the model's (its labels, or as
    many indices as it has outputs), else indices up to the largest label."""
    if data.classes is not None:
        return data.classes
    if model.spec.classes:
        return list(model.spec.classes)
    if model.spec.num_classes is not None:
        return [str(i) for i in range(model.spec.num_classes)]
    largest = max((int(t) for t in data.targets), default=-1)
    return [str(i) for i in range(largest + 1)]
