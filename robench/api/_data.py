"""The caller's data as the engine takes it: a name or path (as `robench eval --data`), or an
`InMemory` (robench/data/in_memory.py) that the task opens as it opens a path. What each kind
of `data` becomes: docs/python-api.md, "Data".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset

from robench._core.errors import DataError
from robench.data.in_memory import KIND, InMemory, tensors_sha256

GivenData = str | InMemory | Mapping[str, str | InMemory] | None


def _tensor(value: Any) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    return None


def _from_tensors(x: torch.Tensor, y: torch.Tensor, name: str) -> InMemory:
    if len(x) != len(y):
        raise DataError(
            f"x has {len(x)} samples but y has {len(y)}; pass inputs and targets of the same "
            "length."
        )
    if len(x) == 0:
        raise DataError(f"{name} has no samples; pass at least one.")
    items = TensorDataset(x.detach().cpu(), y.detach().cpu())
    targets = y.tolist() if y.dim() == 1 else None
    return InMemory(items, name=name, targets=targets, content_sha256=tensors_sha256(x, y))


def _texts_sha256(items: Sequence[Any]) -> str:
    return hashlib.sha256(json.dumps(list(items), default=str).encode()).hexdigest()


def _from_list(items: Sequence[Any], name: str) -> InMemory:
    if not items:
        raise DataError(f"{name} is empty; pass at least one sample.")
    if all(isinstance(item, str) for item in items):
        return InMemory(list(items), name=f"{name}:texts", content_sha256=_texts_sha256(items))
    pairs = [tuple(item) if isinstance(item, (tuple, list)) else item for item in items]
    texts = all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in pairs)
    return InMemory(pairs, name=name, content_sha256=_texts_sha256(pairs) if texts else None)


def _from_dataset(dataset: Dataset, name: str) -> InMemory:
    if isinstance(dataset, IterableDataset) or not hasattr(dataset, "__len__"):
        raise DataError(
            f"{name} is an iterable dataset without a length, which robench cannot index; pass "
            "a map-style Dataset, tensors (x, y) or a DataLoader over a finite dataset."
        )
    if isinstance(dataset, TensorDataset) and len(dataset.tensors) == 2:
        return _from_tensors(*dataset.tensors, name=name)
    if len(dataset) == 0:  # type: ignore[arg-type]
        raise DataError(f"{name} has no samples; pass a dataset with at least one.")
    targets = getattr(dataset, "targets", None)
    if targets is not None and len(targets) != len(dataset):  # type: ignore[arg-type]
        targets = None
    if isinstance(targets, torch.Tensor):
        targets = targets.tolist()
    classes = getattr(dataset, "classes", None)
    valid = isinstance(classes, (list, tuple)) and all(isinstance(c, str) for c in classes)
    return InMemory(dataset, name=name, classes=classes if valid else None, targets=targets)


def _batch_parts(batch: Any, number: int) -> tuple[Any, torch.Tensor]:
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        shown = type(batch).__name__
        raise DataError(
            f"batch {number} of the DataLoader is a {shown}, not (inputs, targets); robench "
            "reads batches of two tensors (or texts and labels): pass such a DataLoader, its "
            "dataset, or tensors (x, y)."
        )
    inputs, targets = batch
    labels = _tensor(targets)
    if labels is None or (_tensor(inputs) is None and not _all_strings(inputs)):
        raise DataError(
            f"batch {number} of the DataLoader holds {type(inputs).__name__} and "
            f"{type(targets).__name__}, not tensors; robench reads batches of (inputs, "
            "targets) tensors (or texts and labels): pass its dataset or tensors (x, y)."
        )
    return inputs, labels


def _all_strings(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def _from_loader(loader: DataLoader, name: str) -> InMemory:
    inputs: list[Any] = []
    targets: list[torch.Tensor] = []
    for number, batch in enumerate(loader):
        x, y = _batch_parts(batch, number)
        inputs.append(x)
        targets.append(y)
    if not inputs:
        raise DataError(f"{name} yields no batch; pass a DataLoader over some samples.")
    y = torch.cat([t.reshape(len(t), *t.shape[1:]) for t in targets])
    if all(_all_strings(x) for x in inputs):
        texts = [text for x in inputs for text in x]
        return _from_list(list(zip(texts, y.tolist(), strict=True)), name)
    try:
        x = torch.cat([torch.as_tensor(v) for v in inputs])
    except (RuntimeError, TypeError) as exc:
        raise DataError(
            f"the batches of {name} cannot be joined ({exc}); robench reads batches of "
            "inputs of one shape: pass its dataset or tensors (x, y)."
        ) from None
    return _from_tensors(x, y, name)


def as_engine_data(data: Any) -> GivenData:
    """The caller's `data=` as the engine takes it (see the module docstring)."""
    if data is None or isinstance(data, str):
        return data
    if isinstance(data, Path):
        return str(data)
    if isinstance(data, Mapping):
        return {
            str(key): _one(value, f"{KIND}:{key}", where=f"data[{key!r}]")
            for key, value in data.items()
        }
    return _one(data, KIND)


def _one(data: Any, name: str, where: str = "data=") -> str | InMemory:
    if isinstance(data, (str, Path)):
        return str(data)
    if isinstance(data, InMemory):
        return data
    if isinstance(data, DataLoader):
        return _from_loader(data, f"{name}:DataLoader")
    if isinstance(data, Dataset):
        return _from_dataset(data, f"{name}:{type(data).__name__}")
    if isinstance(data, tuple) and len(data) == 2:
        x, y = _tensor(data[0]), _tensor(data[1])
        if x is not None and y is not None:
            return _from_tensors(x, y, f"{name}:tensors")
    if isinstance(data, (list, tuple)):
        return _from_list(list(data), name)
    raise DataError(
        f"{where} is a {type(data).__name__}; pass a dataset name or path, a torch Dataset or "
        "DataLoader, tensors (x, y), a list of strings or a list of (input, target) pairs"
        + ("" if where == "data=" else " (a dict of data= maps the suite's dataset names to them)")
        + "."
    )


def _first(data: Any) -> InMemory | None:
    """In-memory data with a first item (the first dataset of named ones), else None."""
    if isinstance(data, Mapping):
        data = next(iter(data.values()), None)
    return data if isinstance(data, InMemory) and len(data) > 0 else None


def float_image_size(data: Any) -> tuple[int, int, int] | None:
    """(C, H, W) of the first image of in-memory data whose images are float tensors or
    arrays (used as they are, so they set the model's input size); None otherwise."""
    if (found := _first(data)) is None:
        return None
    try:
        first = found.item(0)[0]
    except DataError:
        return None
    image = _tensor(first)
    if image is None or not image.is_floating_point() or image.dim() not in (2, 3):
        return None
    shape = tuple(image.shape) if image.dim() == 3 else (1, *image.shape)
    return (int(shape[0]), int(shape[1]), int(shape[2]))


def why_no_image_size(data: Any) -> str | None:
    """Why in-memory `data` cannot give an image model its input size (the first input is
    not a float image tensor), as the fix to say; None when it could or there is no data."""
    if (data := _first(data)) is None:
        return None
    first = data.item(0)[0]
    if isinstance(first, str):
        return (
            f"{data.name} holds texts, but the model takes images; pass images as float "
            "tensors (x, y) in [0, 1], or a text model (or task=) for texts."
        )
    image = _tensor(first)
    if image is not None and not image.is_floating_point():
        return (
            f"{data.name} holds {image.dtype} images, but robench takes images as floats in "
            "[0, 1]; pass x.float() / 255 for 0..255 pixels."
        )
    return None
