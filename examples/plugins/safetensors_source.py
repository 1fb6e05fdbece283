"""A model source from a plugin: `safetensors:ARCH@FILE`, a timm architecture (robench's zoo
included) with the weights of a bare safetensors file, no model card and no checkpoint
metadata.

    robench eval safetensors:vit_nano_patch4_28@models/vit_nano_fmnist.safetensors \\
        --import examples/plugins/safetensors_source.py --suite smoke --limit 8

The prefix is registered now with the builder's "module:function" path, so `robench list
models` shows it without importing torch; the builder runs when a model names the prefix. It
returns a `LoadedModel` whose `origin` (the file and its sha256) becomes the report's
`model.source`, so the report says exactly which weights it measured.
"""

from __future__ import annotations

from pathlib import Path

from robench.registry import LoadedModel, SourceRequest, register_source

register_source(
    "safetensors",
    f"{__name__}:from_safetensors",
    "a timm architecture with the weights of a bare .safetensors file",
    "safetensors:resnet18@weights/resnet18.safetensors",
)


def from_safetensors(request: SourceRequest) -> LoadedModel:
    import timm

    import robench.models.zoo  # noqa: F401  # registers robench's own architectures in timm
    from robench._core.errors import ConfigError
    from robench.models.checkpoints import read_checkpoint
    from robench.models.loading import image_model
    from robench.models.provenance import ModelOrigin, hash_files

    architecture, _, file = request.target.partition("@")
    weights = Path(file).expanduser()
    if not file or not weights.is_file() or not timm.is_model(architecture):
        raise ConfigError(
            f"model {request.name!r}: give safetensors:ARCH@FILE with a timm architecture and "
            "an existing .safetensors file, e.g. "
            "safetensors:vit_nano_patch4_28@models/vit_nano_fmnist.safetensors."
        )
    state = read_checkpoint(weights, trust=False).state_dict  # safetensors: no unpickling
    network = timm.create_model(architecture, num_classes=_classes(state))
    network.load_state_dict(state)
    origin = ModelOrigin(source="safetensors", location=str(weights.resolve()))
    origin.weights = hash_files([weights], weights.parent)
    kwargs = {"num_classes": _classes(state)}
    return image_model(
        request.name,
        architecture,
        network,
        overrides=request.overrides,
        kwargs=kwargs,
        origin=origin,
        device=request.device,
    )


def _classes(state: dict) -> int:  # type: ignore[type-arg]
    """The classifier's outputs: the rows of the last 2-d weight (timm's heads)."""
    last = [value for key, value in state.items() if key.endswith("weight") and value.ndim == 2]
    return int(last[-1].shape[0])
