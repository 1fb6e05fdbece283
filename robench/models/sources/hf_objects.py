"""A transformers model object held in memory, as the `hf:` source would load its folder
(docs/python-api.md, "Models"): its task from its class by transformers' own tables, wrapped by
the same modules, its image processor or tokenizer the caller's or read offline from
`model.name_or_path`, so the numbers equal `robench eval hf:FOLDER` on the same weights.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import nn

from robench._core.errors import ConfigError
from robench.models.loaded_model import LoadedModel, text_model
from robench.models.loading import image_model
from robench.models.provenance import ModelOrigin
from robench.models.sources.hf_tasks import (
    IMAGE_CLASSIFICATION,
    LANGUAGE_MODELING,
    SEMANTIC_SEGMENTATION,
    TEXT_CLASSIFICATION,
    task_tables,
)
from robench.models.spec import ModelSpec


def is_transformers_model(model: Any) -> bool:
    """Whether `model` is a transformers `PreTrainedModel` (without importing transformers
    when the caller has not)."""
    import sys

    if "transformers" not in sys.modules:
        return False
    from transformers import PreTrainedModel

    return isinstance(model, PreTrainedModel)


def transformers_object_task(model: nn.Module) -> str | None:
    """The task of a transformers model by its class name; None: not one robench evaluates."""
    name = type(model).__name__
    for task, names in task_tables().items():
        if name in names:
            return task
    return None


@dataclass
class HFObjectRequest:
    """What `robench.evaluate` passes with a transformers model object."""

    model: nn.Module
    name: str
    origin: ModelOrigin
    given: ModelSpec  # the caller's preprocessing= (mean, std, size)
    processor: Any = None  # image_processor=
    tokenizer: Any = None  # tokenizer=
    device: torch.device | str = "cpu"
    architecture: str = ""  # what the report names; "": the model's class name


def _saved_folder(model: nn.Module) -> Path | None:
    """The folder (or cached repo's snapshot) `model.name_or_path` names, if it exists here."""
    name = str(getattr(model, "name_or_path", "") or "")
    if not name:
        return None
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    from robench.models.sources.hf_cache import find_cached_repo

    try:
        return find_cached_repo(name).folder
    except ConfigError:
        return None


def _image_processor(request: HFObjectRequest) -> Any:
    """The caller's image processor, else the one saved beside the model; None if neither."""
    if request.processor is not None:
        return request.processor
    folder = _saved_folder(request.model)
    if folder is None or not (folder / "preprocessor_config.json").is_file():
        return None
    from transformers import AutoImageProcessor

    return AutoImageProcessor.from_pretrained(str(folder), local_files_only=True)


def _tokenizer(request: HFObjectRequest, what: str) -> Any:
    """The caller's tokenizer, else the one saved beside the model (one sentence if none)."""
    if request.tokenizer is not None:
        return request.tokenizer
    folder = _saved_folder(request.model)
    if folder is None:
        raise ConfigError(
            f"{request.name} is {what} but no tokenizer was given and its name_or_path "
            f"({getattr(request.model, 'name_or_path', '') or 'empty'}) is no folder with one; "
            "pass tokenizer=."
        )
    from robench.models.sources.hf_causal_lm import read_tokenizer

    return read_tokenizer(folder, False, what)


def _pixel_values_object(request: HFObjectRequest, segmenter: bool) -> LoadedModel:
    processor = _image_processor(request)
    if processor is None and (request.given.mean is None or request.given.std is None):
        raise ConfigError(
            f"{request.name} is a transformers image model but no image processor was given "
            "and none is saved beside it, so robench does not know its normalisation; pass "
            "image_processor= (e.g. AutoImageProcessor.from_pretrained(...)) or "
            "preprocessing=dict(mean=..., std=..., size=(C, H, W))."
        )
    channels = int(getattr(request.model.config, "num_channels", 3))  # type: ignore[union-attr]
    return pixel_values_model(request, segmenter, processor, channels, request.name)


def pixel_values_model(
    request: HFObjectRequest,
    segmenter: bool,
    processor: Any,
    channels: int,
    where: str,
    overrides_label: str = "preprocessing=",
) -> LoadedModel:
    """`request.model` wrapped to take images (a segmenter's logits (B, K, h, w) stay at the
    model's resolution, hf_segmentation), its image `processor`'s preprocessing inside (`where`
    names it in errors), the caller's `given` (what `overrides_label` names) over it."""
    from robench.models.sources.hf_image import PixelValuesClassifier, processor_preprocessing
    from robench.models.sources.hf_segmentation import (
        PixelValuesSegmenter,
        class_names,
        segmentation_preprocessing,
    )

    own = ModelSpec()
    # What the segmentation readers do: squash every image to one size.
    resize: dict[str, str] | None = {"resize_mode": "squash"} if segmenter else None
    if processor is not None and segmenter:
        given = request.given.input_size is not None
        own = segmentation_preprocessing(processor, channels, where, size_given=given)
    elif processor is not None:
        own, resize = processor_preprocessing(processor, channels, where)
    return image_model(
        request.name,
        request.architecture or type(request.model).__name__,
        (PixelValuesSegmenter if segmenter else PixelValuesClassifier)(request.model),
        overrides=request.given,
        kwargs={},
        own=own,
        own_label="image processor",
        origin=request.origin,
        task=SEMANTIC_SEGMENTATION if segmenter else IMAGE_CLASSIFICATION,
        classes=class_names(request.model),
        resize=resize,
        device=request.device,
        overrides_label=overrides_label,
    )


def _causal_lm(request: HFObjectRequest) -> LoadedModel:
    from robench.models.sources.hf_causal_lm import (
        CausalLMLogits,
        check_tokenizer,
        resolve_max_length,
    )

    tokenizer = _tokenizer(request, "a causal language model")
    wrapped = CausalLMLogits(request.model)
    check_tokenizer(tokenizer, wrapped.vocab_size, f"the tokenizer of {request.name}")
    max_length = resolve_max_length(request.model.config, tokenizer)
    request.origin.extra.update(
        {"tokenizer_class": type(tokenizer).__name__, "tokenizer_size": len(tokenizer)}
    )
    return _text_model(request, wrapped, LANGUAGE_MODELING, tokenizer, max_length)


def _text_classifier(request: HFObjectRequest) -> LoadedModel:
    from robench.models.sources.hf_text_classifier import class_names, max_tokens
    from robench.models.text_inputs import TokenizerTextClassifier

    tokenizer = _tokenizer(request, "a text classifier")
    if tokenizer.pad_token is None:  # as the hf: source pads (GPT-2 style); a copy, not theirs
        tokenizer = copy.deepcopy(tokenizer)
        tokenizer.pad_token = tokenizer.eos_token
    config: Any = request.model.config
    if config.pad_token_id is None:  # restored with the caller's model after the run
        config.pad_token_id = tokenizer.pad_token_id
    length = max_tokens(request.model, tokenizer)
    request.origin.extra.update({"max_tokens": length})
    wrapped = TokenizerTextClassifier(request.model, tokenizer, length)
    return _text_model(
        request, wrapped, TEXT_CLASSIFICATION, tokenizer, length, class_names(request.model)
    )


def _text_model(
    request: HFObjectRequest,
    wrapped: nn.Module,
    task: str,
    tokenizer: Any,
    length: int,
    classes: list[str] | None = None,
) -> LoadedModel:
    return text_model(
        wrapped,
        name=request.name,
        architecture=request.architecture or type(request.model).__name__,
        task=task,
        origin=request.origin,
        tokenizer=tokenizer,
        max_length=length,
        device=request.device,
        classes=classes,
    )


# task -> how a transformers object of that task is wrapped.
BUILDERS: dict[str, Callable[[HFObjectRequest], LoadedModel]] = {
    IMAGE_CLASSIFICATION: partial(_pixel_values_object, segmenter=False),
    SEMANTIC_SEGMENTATION: partial(_pixel_values_object, segmenter=True),
    LANGUAGE_MODELING: _causal_lm,
    TEXT_CLASSIFICATION: _text_classifier,
}
