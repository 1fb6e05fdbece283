"""`hf:PATH_OR_REPO`: a transformers model from a local folder or the local Hub cache
(docs/models.md, "transformers folders").

The folder's config.json decides the task (`hf_tasks.transformers_task`); the model is built
offline with the task's auto class and its own image processor or tokenizer, and wrapped as
the model object held in memory is (`hf_objects`; a causal LM by `hf_causal_lm`). A pickled
`.bin` that needs more than `weights_only=True` is refused: convert it to safetensors.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from robench._core.errors import CheckpointError, ConfigError, first_line
from robench.models.loaded_model import text_model
from robench.models.loading import LoadedModel
from robench.models.provenance import ModelOrigin, hash_files, weight_files
from robench.models.sources.hf_cache import find_cached_repo
from robench.models.sources.hf_folder_checks import (
    check_safetensors,
    load_report_held,
    read_config,
)
from robench.models.sources.hf_objects import BUILDERS, HFObjectRequest, pixel_values_model
from robench.models.sources.hf_tasks import (
    IMAGE_CLASSIFICATION,
    LANGUAGE_MODELING,
    SEMANTIC_SEGMENTATION,
    TEXT_CLASSIFICATION,
    transformers_task,
)
from robench.models.sources.model_folder import read_model_config
from robench.models.sources.registry import SourceRequest
from robench.models.spec import ModelSpec

# Files besides the weights whose hashes the report keeps (what decides the numbers).
_CONFIG_FILES = ("config.json", "preprocessor_config.json", "generation_config.json")


def from_transformers(request: SourceRequest) -> LoadedModel:
    classes = request.overrides.num_classes if request.overrides else None
    if classes is not None:  # transformers builds the head from config.json
        raise ConfigError(
            f"{request.name} takes its classes from its config.json (num_labels), so "
            f"--num-classes {classes} would be ignored; drop --num-classes."
        )
    folder, origin = _locate(request.target)
    _, config = read_model_config(folder, "transformers")
    where = f"{request.name} ({folder / 'config.json'})"
    task = transformers_task(config, where, trust_remote_code=request.trust_remote_code)
    weights = _used_weights(folder)
    check_safetensors(weights)
    read_config(folder, request.trust_remote_code)  # a field of the wrong type, said first
    origin.weights = hash_files(weights, folder)
    origin.files = hash_files([folder / n for n in _CONFIG_FILES if (folder / n).is_file()], folder)
    origin.extra["library"] = "transformers"
    return _BUILDERS[task](request, folder, config, origin)


def _locate(target: str) -> tuple[Path, ModelOrigin]:
    """A local folder when one exists at `target`, else the repo's snapshot in the cache."""
    path = Path(target).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ConfigError(f"hf:{target} is a file; pass the model's folder (config.json).")
        return path, ModelOrigin(source="hf", location=str(path.resolve()))
    if target.startswith((".", "/", "~")):
        raise ConfigError(f"model folder {target} does not exist; check the path after hf:.")
    cached = find_cached_repo(target)
    origin = ModelOrigin(
        source="hf", location=cached.repo_id, commit=cached.commit, revision=cached.revision
    )
    return cached.folder, origin


def _used_weights(folder: Path) -> list[Path]:
    """The weight files transformers reads: the safetensors ones when there are any."""
    found = weight_files(folder)
    safe = [p for p in found if p.name.endswith(".safetensors")]
    if not found:
        raise ConfigError(
            f"{folder} has a config.json but no weights (model.safetensors or "
            "pytorch_model.bin); copy the weight files into it."
        )
    return safe or found


def _from_pretrained(loader: Any, folder: Path, request: SourceRequest, what: str) -> Any:
    """`loader.from_pretrained(folder)` offline, its failures as one sentence."""
    import pickle

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # robench's stderr shows its own progress only
    try:
        with load_report_held(folder):
            return loader.from_pretrained(
                str(folder), local_files_only=True, trust_remote_code=request.trust_remote_code
            )
    except pickle.UnpicklingError:
        raise CheckpointError(
            f"the pickled weights in {folder} hold Python objects besides tensors, which can "
            "run code when loaded, so robench refuses them; convert them to model.safetensors "
            "(from_pretrained and save_pretrained on a machine that trusts them)."
        ) from None
    except (OSError, ValueError, KeyError, RuntimeError, TypeError) as exc:
        raise ConfigError(
            f"transformers could not load the {what} in {folder} "
            f"({first_line(exc)}); check the folder."
        ) from None


def _architecture(config: dict[str, Any], network: Any) -> str:
    return (config.get("architectures") or [type(network).__name__])[0]


def _pixel_values_model(
    request: SourceRequest,
    folder: Path,
    config: dict[str, Any],
    origin: ModelOrigin,
    segmenter: bool,
) -> LoadedModel:
    """An image classifier or segmenter with its own image processor, wrapped as the model
    object held in memory is (`hf_objects.pixel_values_model`)."""
    from transformers import (
        AutoImageProcessor,
        AutoModelForImageClassification,
        AutoModelForSemanticSegmentation,
    )

    auto = AutoModelForSemanticSegmentation if segmenter else AutoModelForImageClassification
    network = _from_pretrained(auto, folder, request, "model")
    where = f"{request.name} ({folder / 'preprocessor_config.json'})"
    processor = None
    if (folder / "preprocessor_config.json").is_file():
        processor = _from_pretrained(AutoImageProcessor, folder, request, "image processor")
    held = HFObjectRequest(network, request.name, origin, request.overrides or ModelSpec())
    held.device, held.architecture = request.device, _architecture(config, network)
    channels = int(config.get("num_channels", 3))
    return pixel_values_model(held, segmenter, processor, channels, where, "command line")


def _causal_lm(
    request: SourceRequest, folder: Path, config: dict[str, Any], origin: ModelOrigin
) -> LoadedModel:
    """Built by `robench.models.sources.hf_causal_lm` (model, tokenizer and context length)."""
    from robench.models.sources.hf_causal_lm import build_causal_lm

    parts = build_causal_lm(folder, trust_remote_code=request.trust_remote_code)
    origin.extra.update(parts.info)
    return text_model(
        parts.model,
        name=request.name,
        architecture=_architecture(config, parts.model),
        task=LANGUAGE_MODELING,
        origin=origin,
        tokenizer=parts.tokenizer,
        max_length=parts.max_length,
        device=request.device,
    )


def _text_classifier(
    request: SourceRequest, folder: Path, config: dict[str, Any], origin: ModelOrigin
) -> LoadedModel:
    """`AutoModelForSequenceClassification` with its tokenizer (models/sources/
    hf_text_classifier.py), then wrapped as the model object held in memory is (hf_objects)."""
    from transformers import AutoModelForSequenceClassification

    from robench.models.sources.hf_text_classifier import load_tokenizer

    tokenizer = load_tokenizer(folder, request.trust_remote_code)
    network = _from_pretrained(AutoModelForSequenceClassification, folder, request, "model")
    held = HFObjectRequest(network, request.name, origin, ModelSpec(), tokenizer=tokenizer)
    held.device, held.architecture = request.device, _architecture(config, network)
    return BUILDERS[TEXT_CLASSIFICATION](held)


# task (from the config) -> how robench builds the model.
_BUILDERS: dict[str, Callable[[SourceRequest, Path, dict[str, Any], ModelOrigin], LoadedModel]] = {
    IMAGE_CLASSIFICATION: partial(_pixel_values_model, segmenter=False),
    SEMANTIC_SEGMENTATION: partial(_pixel_values_model, segmenter=True),
    LANGUAGE_MODELING: _causal_lm,
    TEXT_CLASSIFICATION: _text_classifier,
}
