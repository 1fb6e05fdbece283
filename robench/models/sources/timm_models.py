"""timm's own model names: `hf-hub:ORG/NAME[@REV]`, `local-dir:PATH` and pretrained tags
(docs/models.md, "timm folders").

Each resolves to local files (a folder, or a snapshot of the Hub cache: never the network),
reads the weights with robench's safe reader (`read_checkpoint`) and hands the state dict to
`timm.create_model(..., pretrained=True)` through the pretrained config, so timm's own loading
(its checkpoint filters, the classifier layout) applies unchanged.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import timm
from timm.models import (
    get_arch_pretrained_cfgs,
    get_pretrained_cfg,
    is_model_pretrained,
    split_model_name_tag,
)

from robench._core.errors import ConfigError
from robench.models.checkpoints import read_checkpoint
from robench.models.loading import LoadedModel, image_model
from robench.models.provenance import ModelOrigin, hash_files, weight_files
from robench.models.sources.hf_cache import find_cached_repo
from robench.models.sources.model_folder import read_model_config
from robench.models.sources.registry import SourceRequest

# Weight files timm looks for in a folder, in its order (timm/models/_hub.py
# load_state_dict_from_path), with safetensors first as in timm's Hub loader.
_PREFERRED_FILES = ("model.safetensors", "pytorch_model.bin", "pytorch_model.pth", "model.pth")


def from_local_dir(request: SourceRequest) -> LoadedModel:
    folder = Path(request.target).expanduser()
    origin = ModelOrigin(source="local-dir", location=str(folder.resolve()))
    return _from_folder(request, folder, origin)


def from_hub(request: SourceRequest) -> LoadedModel:
    cached = find_cached_repo(request.target)
    origin = ModelOrigin(
        source="hf-hub", location=cached.repo_id, commit=cached.commit, revision=cached.revision
    )
    return _from_folder(request, cached.folder, origin)


def from_pretrained_tag(request: SourceRequest) -> LoadedModel:
    """`ARCH.TAG`: timm's registered pretrained config, weights from the local Hub cache."""
    cfg = get_pretrained_cfg(request.target)
    hub_id = cfg.hf_hub_id if cfg is not None else None
    if cfg is None or not hub_id:
        raise ConfigError(
            f"timm has no Hugging Face Hub weights for {request.target!r}, so robench cannot "
            "find them in the local cache; pass --checkpoint FILE with its weights."
        )
    cached = find_cached_repo(hub_id)
    filename = cfg.hf_hub_filename
    weights = cached.folder / filename if filename else _weight_file(cached.folder)
    origin = ModelOrigin(source="timm", location=hub_id, commit=cached.commit, revision="main")
    architecture, _ = split_model_name_tag(request.target)
    config = {k: v for k, v in cfg.to_dict().items() if v is not None}
    return _build(request, architecture, config, {}, weights, cached.folder, origin)


def _from_folder(request: SourceRequest, folder: Path, origin: ModelOrigin) -> LoadedModel:
    from timm.models._hub import load_model_config_from_path

    config_file, _ = read_model_config(folder, "timm")
    pretrained_cfg, architecture, model_args = load_model_config_from_path(folder)
    if not timm.is_model(architecture):
        raise ConfigError(
            f"{config_file} names architecture {architecture!r}, which this timm "
            f"({timm.__version__}) does not know; upgrade timm or register it with --import."
        )
    origin.files = hash_files([config_file], folder)
    weights = _weight_file(folder)
    return _build(request, architecture, pretrained_cfg, model_args, weights, folder, origin)


def _weight_file(folder: Path) -> Path:
    for name in _PREFERRED_FILES:
        if (folder / name).is_file():
            return folder / name
    found = weight_files(folder)
    if not found:
        raise ConfigError(
            f"{folder} has no weight file (looked for {', '.join(_PREFERRED_FILES)} or any "
            ".safetensors/.bin/.pth); copy the model's weights into it."
        )
    return found[0]


def _build(
    request: SourceRequest,
    architecture: str,
    pretrained_cfg: dict[str, Any],
    model_args: dict[str, Any],
    weights: Path,
    folder: Path,
    origin: ModelOrigin,
) -> LoadedModel:
    if not weights.is_file():
        raise ConfigError(f"{weights} is missing; the model's weights were not copied.")
    ckpt = read_checkpoint(weights, trust=request.trust_checkpoint)
    origin.weights = hash_files([weights], folder)
    # The state dict goes in through the pretrained config: timm loads it as pretrained
    # weights (its filters apply), and no file or network is touched.
    cfg = {k: v for k, v in pretrained_cfg.items() if k not in ("source", "file", "url")}
    cfg.update(state_dict=ckpt.state_dict, hf_hub_id=None)
    overrides = request.overrides
    kwargs = {**model_args, **(overrides.model_kwargs if overrides else {})}
    if overrides is not None and overrides.num_classes is not None:
        kwargs["num_classes"] = overrides.num_classes
    try:
        network = timm.create_model(architecture, pretrained=True, pretrained_cfg=cfg, **kwargs)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"timm could not build {architecture} from {request.name} ({exc}); check that the "
            "weights belong to the config."
        ) from None
    network.pretrained_cfg.pop("state_dict", None)  # type: ignore[union-attr,operator]  # do not keep a second copy of the weights
    labels = pretrained_cfg.get("label_names")
    return image_model(
        request.name,
        architecture,
        network,
        overrides=overrides,
        kwargs=kwargs,
        origin=origin,
        classes=list(labels) if labels else None,
        device=request.device,
    )


def is_pretrained_tag(name: str) -> bool:
    """`ARCH.TAG` naming one of timm's pretrained configs (`resnet50.a1_in1k`)."""
    architecture, tag = split_model_name_tag(name)
    if not tag or not timm.is_model(architecture):
        return False
    if is_model_pretrained(name):
        return True
    tags = [
        t if "." in t else f"{architecture}.{t}" for t in get_arch_pretrained_cfgs(architecture)
    ]
    close = difflib.get_close_matches(name, tags, n=3, cutoff=0.5)
    hint = f" (closest: {', '.join(close)})" if close else ""
    raise ConfigError(
        f"timm has no pretrained tag {tag!r} for {architecture}{hint}; `robench list models "
        f"'{architecture}.*'` lists its tags."
    )
