"""Data held in memory, given to a task in place of a path (`robench.evaluate(data=...)`).

`InMemory` holds what the caller gave as a sequence of `(input, target)` items; each task's
`open_data` turns it into its dataset (`InMemoryImages`, `InMemorySegmentation`, the texts of
data/text/in_memory.py) as it turns a path into one, so batching, records and checks are those
of `robench eval`. The forms an image may take: docs/python-api.md, "Data".
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset, TensorDataset

from robench._core.errors import DataError
from robench.data.labeled import LabeledImages
from robench.data.preprocessing import Preprocessing
from robench.data.segmentation.label_maps import IGNORE_INDEX

KIND = "in-memory"  # the report's `kind` of every dataset held in memory


class InMemory:
    """Items held in memory (see the module docstring), in place of a dataset path."""

    def __init__(
        self,
        items: Sequence[Any] | Dataset,
        *,
        name: str,
        classes: Sequence[str] | None = None,
        targets: Sequence[Any] | None = None,
        content_sha256: str | None = None,
    ) -> None:
        self.items = items
        # Shown where a path would be: "in-memory:TensorDataset".
        self.name = name
        # Class names in label order, when the data names them (a torchvision dataset does).
        self.classes = list(classes) if classes is not None else None
        # Every item's target, when known without reading the inputs; None: read on demand.
        self._targets = list(targets) if targets is not None else None
        # A hash of the data's content when it is cheap (tensors, texts), for the resume
        # fingerprint; None: the fingerprint knows only the name and the length.
        self.content_sha256 = content_sha256

    def __len__(self) -> int:
        return len(self.items)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return self.name

    @property
    def root(self) -> Path:
        """What the report shows as the data's path."""
        return Path(self.name)

    def item(self, index: int) -> tuple[Any, Any]:
        """Item `index` as an (input, target) pair; one sentence when it is not a pair."""
        found = self.items[index]
        if isinstance(found, dict) or not isinstance(found, (tuple, list)) or len(found) != 2:
            shown = type(found).__name__
            raise DataError(
                f"item {index} of {self.name} is a {shown}, not an (input, target) pair; pass "
                "a Dataset whose items are (image, label), (image, mask) or (text, label)."
            )
        return found[0], found[1]

    @property
    def targets(self) -> list[Any]:
        """Every item's target (read from the items when they were not given)."""
        if self._targets is None:
            self._targets = [self.item(i)[1] for i in range(len(self))]
        return self._targets


def _as_label(value: Any, where: str) -> int:
    if isinstance(value, np.generic) or (isinstance(value, torch.Tensor) and value.numel() == 1):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DataError(
            f"{where} has label {value!r}; image labels are class indices (integers from 0)."
        )
    return value


def to_pixels(image: Any, preprocessing: Preprocessing, where: str) -> torch.Tensor:
    """An in-memory image as the model's float (C, H, W) in [0, 1] (docs/python-api.md, Data)."""
    if isinstance(image, Image.Image):
        return preprocessing(image)
    if isinstance(image, np.ndarray):
        image = torch.from_numpy(np.ascontiguousarray(image))
    if not isinstance(image, torch.Tensor):
        raise DataError(
            f"{where} is a {type(image).__name__}; an image is a tensor, a numpy array or a "
            "PIL image."
        )
    image = image.detach().cpu()
    if image.dtype == torch.uint8:
        array = image.numpy()
        if array.ndim == 3 and array.shape[0] in (1, 3) and array.shape[-1] not in (1, 3):
            array = array.transpose(1, 2, 0)  # (C, H, W) -> (H, W, C)
        if array.ndim == 3 and array.shape[-1] == 1:
            array = array[:, :, 0]
        return preprocessing(np.ascontiguousarray(array))
    if not image.is_floating_point():
        raise DataError(
            f"{where} has dtype {image.dtype}; pass float images in [0, 1] or uint8 images."
        )
    image = image.float()
    if image.dim() == 2:
        image = image.unsqueeze(0)
    expected = tuple(preprocessing.input_size)
    if tuple(image.shape) != expected:
        raise DataError(
            f"{where} has shape {tuple(image.shape)} but the model takes {expected}; pass float "
            "images of the model's input size (C, H, W), uint8 or PIL images (which robench "
            "resizes), or give preprocessing=dict(size=...) for the size your model takes."
        )
    return image


class InMemoryImages(LabeledImages):
    """`(image, label)` items held in memory, as image classification reads them."""

    kind = KIND

    def __init__(
        self, data: InMemory, preprocessing: Preprocessing, classes: Sequence[str]
    ) -> None:
        self.data = data
        self.content_sha256 = data.content_sha256
        targets = [_as_label(t, f"item {i} of {data.name}") for i, t in enumerate(data.targets)]
        super().__init__(
            root=data.root,
            classes=list(classes),
            class_index_note="labels are the data's own class indices",
            targets=targets,
            preprocessing=preprocessing,
        )

    def _load_image(self, index: int) -> torch.Tensor:
        image, _ = self.data.item(index)
        return to_pixels(image, self.preprocessing, f"image {index} of {self.data.name}")

    @property
    def stacked_batch(self) -> Any:
        """`(inputs, targets)` of a batch of indices cut from the inputs' one tensor, when they
        are float32 images at the model's input size (what `to_pixels` passes unchanged);
        None otherwise (the DataLoader reads item by item)."""
        items = self.data.items
        if not isinstance(items, TensorDataset) or len(items.tensors) != 2:
            return None
        images = items.tensors[0]
        shape = tuple(self.preprocessing.input_size)
        if images.dtype != torch.float32 or tuple(images.shape[1:]) != shape:
            return None
        return lambda indices: _cut(images, self.targets, indices)


class InMemorySegmentation(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """`(image, label map)` items held in memory, as semantic segmentation reads them: maps
    of class indices (H, W), 255 where no class is scored."""

    task = "semantic-segmentation"
    kind = KIND

    def __init__(
        self, data: InMemory, preprocessing: Preprocessing, classes: Sequence[str]
    ) -> None:
        self.data = data
        self.preprocessing = preprocessing
        self.root = data.root
        self.split: str | None = None
        self.classes = list(classes)
        self.content_sha256 = data.content_sha256

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        image, mask = self.data.item(index)
        where = f"item {index} of {self.data.name}"
        pixels = to_pixels(image, self.preprocessing, f"the image of {where}")
        labels = torch.as_tensor(np.asarray(mask) if not isinstance(mask, torch.Tensor) else mask)
        if labels.dim() != 2 or labels.is_floating_point():
            raise DataError(
                f"the label map of {where} has shape {tuple(labels.shape)} and dtype "
                f"{labels.dtype}; a label map is integers (H, W): class indices, 255 unscored."
            )
        labels = labels.to(torch.int64)
        self._check_classes(labels, where)
        return pixels, labels

    def _check_classes(self, labels: torch.Tensor, where: str) -> None:
        """Every label is a class index of the model or the ignore index; another value would
        count in no class (its metrics silently empty) or fail inside an attack's loss."""
        n = len(self.classes)
        bad = ((labels < 0) | (labels >= n)) & (labels != IGNORE_INDEX)
        if bool(bad.any()):
            raise DataError(
                f"the label map of {where} holds label {int(labels[bad][0])}, not one of the "
                f"model's {n} classes (0..{n - 1}) nor the ignore index {IGNORE_INDEX}; relabel "
                "the maps with the model's class indices (255 for unscored pixels)."
            )


def _cut(
    images: torch.Tensor, targets: Sequence[int], indices: Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows `indices` of `images` (a view when they run in order) and their targets."""
    first = indices[0] if len(indices) else 0
    if list(indices) == list(range(first, first + len(indices))):
        inputs = images[first : first + len(indices)]
    else:
        inputs = images.index_select(0, torch.as_tensor(list(indices), dtype=torch.long))
    # The strides the item path's stacking gives: a caller's channels-last tensor would
    # otherwise reach the model in another memory format (other kernels, other last bits).
    # `contiguous()` is not enough: with one channel it keeps channels-last strides.
    shape = inputs.shape
    if inputs.stride() != tuple(math.prod(shape[i + 1 :]) for i in range(len(shape))):
        inputs = inputs.clone(memory_format=torch.contiguous_format)
    return inputs, torch.as_tensor([targets[i] for i in indices], dtype=torch.long)


def tensors_sha256(*tensors: torch.Tensor) -> str:
    """sha256 over tensors' dtypes, shapes and bytes: the content of `(x, y)` data."""
    digest = hashlib.sha256()
    for tensor in tensors:
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"{tensor.dtype}:{tuple(tensor.shape)}\0".encode())
        # The array's own buffer, not a copy of it (600 MB for 1,000 ImageNet-size images).
        digest.update(flat.view(torch.uint8).numpy().data if flat.numel() else b"")
    return digest.hexdigest()
