"""The caller's model as robench evaluates it: a `LoadedModel` (robench/models/loaded_model.py).

A string is left to the engine (`load_model`, exactly as `robench eval MODEL`). An object is
wrapped here, by what it is:

- a transformers `PreTrainedModel`: the task of its head (transformers' tables), its image
  processor or tokenizer given or saved beside it (`models/sources/hf_objects.py`);
- any module with `tokenizer=` a robench `Vocabulary`: a zoo word-level model, its
  `robench_task` or else language modelling;
- a module whose task (`task=`, its `robench_task`) is sequence classification: an LRA
  model reading token ids as they are;
- a timm model (`pretrained_cfg`): an image model, `preprocessing=` over the data's size over
  its `pretrained_cfg`;
- another `nn.Module`: an image model, `preprocessing=` over the data's size, else pixels in
  [0, 1] as they are (mean 0, std 1).

An image network that names no task gets the suite's task, or, with the default suite,
semantic segmentation when it returns per-pixel logits (B, K, H, W) and image classification
otherwise. `task=` overrides all of it. One forward pass on a blank batch then checks that the
output is logits of the task's shape (`check_outputs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

from robench._core.errors import ConfigError, first_line
from robench.data.preprocessing import Preprocessing
from robench.models.in_memory import class_path, memory_image_model, memory_origin
from robench.models.loaded_model import LoadedModel
from robench.models.spec import ModelSpec

IMAGE_TASKS = ("image-classification", "semantic-segmentation")
# Channels, height and width of the built-in image data, for a module that states no size.
NATIVE_SIZES = {"fashion-mnist": (1, 28, 28), "fashion-scenes": (3, 64, 64)}
# The keys `preprocessing=` takes -> ModelSpec fields.
_PREPROCESSING_KEYS = {
    "mean": "mean",
    "std": "std",
    "size": "input_size",
    "input_size": "input_size",
    "interpolation": "interpolation",
    "crop_pct": "crop_pct",
}


@dataclass
class ModelOptions:
    """What `robench.evaluate` was told about the model besides the model itself."""

    task: str | None = None  # task=
    name: str | None = None  # model_name=
    preprocessing: Any = None  # preprocessing=: a dict, or a robench Preprocessing
    tokenizer: Any = None
    image_processor: Any = None
    device: str = "cpu"
    data_size: tuple[int, int, int] | None = None  # the in-memory data's image size, if float
    data_name: str | None = None  # the data's name or path, for NATIVE_SIZES
    suite_task: str | None = None  # the task of a suite the caller chose (not the default)
    # The keyword that gave `preprocessing`, as errors and config_sources name it.
    keyword: str = "preprocessing"


def given_spec(preprocessing: Any, keyword: str = "preprocessing") -> ModelSpec:
    """`preprocessing=` (or the `keyword=` that gave it) as a ModelSpec (mean, std, input
    size, interpolation, crop)."""
    if preprocessing is None:
        return ModelSpec()
    if isinstance(preprocessing, Preprocessing):
        values: dict[str, Any] = {
            "input_size": preprocessing.input_size,
            "interpolation": preprocessing.interpolation,
            "crop_pct": preprocessing.crop_pct,
        }
    elif isinstance(preprocessing, Mapping):
        unknown = sorted(set(preprocessing) - set(_PREPROCESSING_KEYS))
        if unknown:
            raise ConfigError(
                f"{keyword}= has unknown key(s) {', '.join(map(repr, unknown))}; it takes "
                "mean, std, size (C, H, W), interpolation and crop_pct."
            )
        values = {_PREPROCESSING_KEYS[k]: v for k, v in preprocessing.items() if v is not None}
    else:
        raise ConfigError(
            f"{keyword}= is a {type(preprocessing).__name__}; pass a dict such as "
            "dict(mean=(0.5,), std=(0.5,), size=(1, 28, 28)) or a robench Preprocessing."
        )
    values = {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in values.items()}
    try:
        return ModelSpec.model_validate(values)
    except ValueError as exc:
        raise ConfigError(
            f"{keyword}= is invalid ({first_line(exc)}); give mean and std per channel in "
            "[0, 1] pixel units and size as (C, H, W)."
        ) from None


def check_device(module: nn.Module, device: str) -> None:
    """The model must already be on `device=`: robench does not move the caller's model."""
    wanted = torch.device(device)
    for tensor in [*module.parameters(), *module.buffers()]:
        here = tensor.device
        if here.type != wanted.type or (wanted.index is not None and here.index != wanted.index):
            raise ConfigError(
                f"the model is on {here} but device={device!r}; move it first "
                f"(model.to({device!r})) or pass device={str(here)!r}."
            )
        return


def _image_spec(module: nn.Module, options: ModelOptions) -> tuple[ModelSpec, ModelSpec | None]:
    """(the caller's layer, the model's own layer: None for timm's pretrained_cfg)."""
    given = given_spec(options.preprocessing, options.keyword)
    if given.input_size is None and options.data_size is not None:
        given = given.model_copy(update={"input_size": options.data_size})
    timm_cfg = isinstance(getattr(module, "pretrained_cfg", None), Mapping)
    if timm_cfg:
        return given, None
    size = given.input_size or NATIVE_SIZES.get(str(options.data_name))
    if size is None:
        raise ConfigError(
            f"robench does not know the input size of {type(module).__name__}; pass "
            f"{options.keyword}=dict(size=(C, H, W)), or images as float tensors of that size."
        )
    channels = size[0]
    own = ModelSpec(input_size=size, mean=(0.0,) * channels, std=(1.0,) * channels)
    return given, own


def _image_model(module: nn.Module, task: str, options: ModelOptions) -> LoadedModel:
    given, own = _image_spec(module, options)
    classes = getattr(getattr(module, "pretrained_cfg", None) or {}, "get", lambda _k: None)(
        "label_names"
    )
    return memory_image_model(
        module,
        name=options.name or type(module).__name__,
        architecture=class_path(module),
        given=given,
        own=own if own is not None else _timm_spec(module),
        own_label="timm pretrained_cfg" if own is None else "pixels in [0, 1]",
        origin=memory_origin(module, {"model_name": options.name} if options.name else None),
        task=task,
        classes=list(classes) if classes else None,
        device=options.device,
        overrides_label=f"{options.keyword}=",
    )


def _timm_spec(module: nn.Module) -> ModelSpec:
    cfg = dict(getattr(module, "pretrained_cfg", None) or {})
    fields = ("input_size", "mean", "std", "interpolation", "crop_pct")
    return ModelSpec.model_validate(
        {k: tuple(cfg[k]) if isinstance(cfg.get(k), list) else cfg.get(k) for k in fields}
    )


def _word_level_model(module: nn.Module, task: str | None, options: ModelOptions) -> LoadedModel:
    """A robench zoo model reading the words of a `Vocabulary` (tokenizer=)."""
    from robench.models.text_inputs import WordLevelTextClassifier

    task = task or getattr(module, "robench_task", None) or "language-modeling"
    network: nn.Module = module
    if task == "text-classification":
        network = WordLevelTextClassifier(module, options.tokenizer)
    return _memory_model(module, network, task, options, vocabulary=options.tokenizer)


def _sequence_model(module: nn.Module, options: ModelOptions) -> LoadedModel:
    """A sequence classifier (an LRA model) reading token ids (B, L), or pairs (B, 2, L)."""
    return _memory_model(module, module, "sequence-classification", options)


def _memory_model(
    module: nn.Module,
    network: nn.Module,
    task: str,
    options: ModelOptions,
    vocabulary: Any = None,
) -> LoadedModel:
    """The LoadedModel of a zoo module held in memory that takes its inputs as they are (no
    image preprocessing): `network` is what runs, `module` what its provenance names."""
    name = options.name or type(module).__name__
    extra = {"model_name": options.name} if options.name else None
    return LoadedModel(
        model=network.to(options.device).eval(),
        name=name,
        architecture=class_path(module),
        model_kwargs={},
        spec=ModelSpec(architecture=class_path(module)),
        sources={},
        card_path=None,
        checkpoint=None,
        preprocessing=None,
        task=task,
        vocabulary=vocabulary,
        origin=memory_origin(module, extra),
    )


def _transformers_model(module: nn.Module, task: str | None, options: ModelOptions) -> LoadedModel:
    from robench.models.sources.hf_objects import (
        BUILDERS,
        HFObjectRequest,
        transformers_object_task,
    )

    found = task or transformers_object_task(module)
    if found is None or found not in BUILDERS:
        raise ConfigError(
            f"{type(module).__name__} is a transformers model robench cannot evaluate; it "
            "evaluates image classifiers, semantic segmentation models, causal language models "
            "and sequence classifiers (or pass task=)."
        )
    extra = {"library": "transformers", **({"model_name": options.name} if options.name else {})}
    request = HFObjectRequest(
        model=module,
        name=options.name or type(module).__name__,
        origin=memory_origin(module, extra),
        given=given_spec(options.preprocessing, options.keyword),
        processor=options.image_processor,
        tokenizer=options.tokenizer,
        device=options.device,
    )
    return BUILDERS[found](request)


def wrap_model(module: nn.Module, options: ModelOptions) -> LoadedModel:
    """The caller's module as a LoadedModel of its task (see the module docstring), its
    outputs checked on blank inputs."""
    return check_outputs(build_model(module, options))


def build_model(module: nn.Module, options: ModelOptions) -> LoadedModel:
    """The caller's module as a LoadedModel of its task, its outputs not checked yet: a
    transfer attack's surrogate is checked against the evaluated model instead."""
    from robench.data.text.vocabulary import Vocabulary
    from robench.models.sources.hf_objects import is_transformers_model

    check_device(module, options.device)
    if is_transformers_model(module):
        return _transformers_model(module, options.task, options)
    if isinstance(options.tokenizer, Vocabulary):
        return _word_level_model(module, options.task, options)
    declared = options.task or getattr(module, "robench_task", None) or options.suite_task
    if declared == "sequence-classification":
        return _sequence_model(module, options)
    if declared is not None and declared not in IMAGE_TASKS:
        raise ConfigError(
            f"{type(module).__name__} is evaluated on {declared} but robench wraps a plain "
            "module as an image model; for text pass a transformers model, or a robench "
            "model with tokenizer= its Vocabulary."
        )
    loaded = _image_model(module, declared or "image-classification", options)
    if declared is None and _output_dims(loaded) == 4:  # per-pixel logits: a segmenter
        loaded = replace(loaded, task="semantic-segmentation")
    return loaded


# What a forward pass on inputs of the wrong size or kind raises.
_FORWARD_ERRORS = (RuntimeError, ValueError, TypeError, IndexError, AttributeError)


def _blank_inputs(loaded: LoadedModel) -> torch.Tensor:
    """Two blank inputs of the task: images of the input size, token ids, or texts."""
    device = next(loaded.model.parameters(), torch.empty(0)).device
    if loaded.preprocessing is not None:
        return torch.zeros(2, *loaded.preprocessing.input_size, device=device)
    if loaded.task == "text-classification":
        from robench.data.text.text_rows import encode_rows

        return encode_rows(["a text", "another text"]).to(device)
    if loaded.task == "sequence-classification" and getattr(loaded.model, "pair", False):
        return torch.zeros(2, 2, 8, dtype=torch.long, device=device)  # retrieval pairs
    return torch.zeros(2, 8, dtype=torch.long, device=device)


def _output_dims(loaded: LoadedModel) -> int:
    """The dimensions of the model's output on blank inputs; -1 when it returns no tensor
    or cannot run on them (`check_outputs` then says so in one sentence)."""
    try:
        with torch.no_grad():
            found = loaded.model(_blank_inputs(loaded))
    except _FORWARD_ERRORS:
        return -1
    return found.dim() if isinstance(found, torch.Tensor) else -1


# task -> (dimensions of its logits, their shape in words).
_LOGITS = {
    "image-classification": (2, "(batch, classes)"),
    "semantic-segmentation": (4, "(batch, classes, height, width)"),
    "language-modeling": (3, "(batch, tokens, vocabulary)"),
    "text-classification": (2, "(batch, classes)"),
    "sequence-classification": (2, "(batch, classes)"),
}


def check_outputs(loaded: LoadedModel) -> LoadedModel:
    """One forward pass on blank inputs: the model must return logits of its task's shape.
    Records the number of classes of a classifier or segmenter (`spec.num_classes`)."""
    inputs = _blank_inputs(loaded)
    dims, shape = _LOGITS[loaded.task]
    try:
        with torch.no_grad():
            found = loaded.model(inputs)
    except _FORWARD_ERRORS as exc:
        raise ConfigError(
            f"{loaded.name} cannot run on {loaded.task} inputs of shape {tuple(inputs.shape)} "
            f"({first_line(exc)}); give preprocessing=dict(size=(C, H, W)) for the input size "
            "it takes, or task= for what it does."
        ) from None
    if not isinstance(found, torch.Tensor) or found.dim() != dims or len(found) != len(inputs):
        what = tuple(found.shape) if isinstance(found, torch.Tensor) else type(found).__name__
        raise ConfigError(
            f"{loaded.name} returned {what} for {len(inputs)} inputs, not {loaded.task} logits "
            f"{shape}; make forward return the logits tensor (not a tuple, dict or "
            "probabilities), or pass task= for what the model does."
        )
    classifies = loaded.task in (*IMAGE_TASKS, "text-classification", "sequence-classification")
    if classifies and loaded.spec.num_classes is None:
        loaded.spec = loaded.spec.model_copy(update={"num_classes": int(found.shape[1])})
    return loaded
