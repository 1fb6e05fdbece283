"""Models held in memory (`robench.evaluate(model)`): their provenance and their wrapping.

A model that came from no file has no checkpoint hash; its `ModelOrigin` (source "memory")
holds a sha256 over its state dict instead, so two reports of the same weights carry the same
`checkpoint_sha256` and `robench gate` / `compare` tell same weights from different ones
whatever the process that held them. The hash covers every entry of `state_dict()` in name
order: its name, dtype, shape and bytes (float weights as stored, so a bit flip changes it).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from robench.models.loaded_model import LoadedModel
from robench.models.loading import image_model, pretrained_cfg_spec
from robench.models.provenance import ModelOrigin
from robench.models.sliding_window import with_inference
from robench.models.spec import ModelSpec

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


def memory_image_model(
    network: nn.Module,
    *,
    name: str,
    architecture: str,
    given: ModelSpec,
    own: ModelSpec | None,
    own_label: str,
    origin: ModelOrigin,
    task: str,
    classes: list[str] | None = None,
    resize: dict[str, str] | None = None,
    device: torch.device | str = "cpu",
    overrides_label: str = "preprocessing=",
) -> LoadedModel:
    """An image network held in memory, normalisation inside, as `load_model` builds one:
    `given` (the caller's preprocessing) over `own` (an image processor's, pixels in [0, 1],
    or None: timm's pretrained_cfg, read before a wrapper hides it); a network with
    `robench_inference` (mmseg's test mode) runs in it."""
    own = own if own is not None else pretrained_cfg_spec(network)
    inference = getattr(network, "robench_inference", None)
    if inference is not None:
        network = with_inference(network, inference)
    loaded = image_model(
        name,
        architecture,
        network,
        overrides=given,
        kwargs={},
        origin=origin,
        classes=classes,
        own=own,
        own_label=own_label,
        resize=resize,
        device=device,
        overrides_label=overrides_label,  # the keyword that gave `given`
    )
    return replace(loaded, task=task, task_declared=True)
