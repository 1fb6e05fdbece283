"""Models held in memory (`robench.evaluate(model)`): their provenance (docs/python-api.md,
"Provenance of a model held in memory"). A model that came from no file has no checkpoint
hash; its `ModelOrigin` (source "memory") holds a sha256 over its state dict instead, so
`robench gate` / `compare` tell same weights from different ones whatever process held them.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch
from torch import nn

from robench.models.provenance import ModelOrigin

MEMORY_SOURCE = "memory"  # the report's `model.source.source` of a model held in memory
_WEIGHTS_KEY = "state_dict"  # the one "weight file" name of `ModelOrigin.weights`


def state_dict_sha256(module: nn.Module) -> str:
    """sha256 over the module's state dict (names, dtypes, shapes, bytes), deterministic."""
    digest = hashlib.sha256()
    for name, value in sorted(module.state_dict().items()):
        if not isinstance(value, torch.Tensor):  # extra state a module may keep
            digest.update(f"{name}:{value!r}\0".encode())
            continue
        flat = value.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"{name}:{value.dtype}:{tuple(value.shape)}\0".encode())
        if flat.numel():
            digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def class_path(module: nn.Module) -> str:
    """`package.module.Class` of the module's type."""
    kind = type(module)
    return f"{kind.__module__}.{kind.__qualname__}"


def memory_origin(module: nn.Module, extra: dict[str, Any] | None = None) -> ModelOrigin:
    """The provenance of a model held in memory (see the module docstring)."""
    return ModelOrigin(
        source=MEMORY_SOURCE,
        location=class_path(module),
        weights={_WEIGHTS_KEY: state_dict_sha256(module)},
        extra={
            "class": class_path(module),
            "n_parameters": sum(p.numel() for p in module.parameters()),
            **(extra or {}),
        },
    )
