"""The `memory` source: a model object held in memory (`robench.evaluate(model)`) as a
`LoadedModel`, wrapped by what it is, its task, preprocessing and device found as
docs/python-api.md says ("Models", "What is inferred"). A plain module is wrapped by what its
task's models read (`TaskEntry.inputs`, `WRAPPERS`), and one forward pass on blank inputs
checks its logits' shape (`check_outputs`). The models layer cannot import the tasks: the
caller hands down their registry (`MemoryOptions.tasks`). The caller's model is never moved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import torch
from torch import nn

from robench._core.errors import ConfigError, first_line
from robench.data.preprocessing import Preprocessing
from robench.models.in_memory import class_path, memory_origin
from robench.models.loaded_model import LoadedModel, module_device, text_model
from robench.models.loading import image_model, pretrained_cfg_spec
from robench.models.sliding_window import with_inference
from robench.models.sources.registry import MemoryOptions, SourceRequest
from robench.models.spec import ModelSpec

# Channels, height and width of the built-in image data, for a module that states no size.
NATIVE_SIZES = {"fashion-mnist": (1, 28, 28), "fashion-scenes": (3, 64, 64)}
# The keys `preprocessing=` takes -> ModelSpec fields.
_PREPROCESSING_KEYS = {"size": "input_size"} | {
    key: key for key in ("mean", "std", "input_size", "interpolation", "crop_pct")
}
_IMAGE_CLASSIFICATION = "image-classification"


class TaskEntry(Protocol):
    """What this source reads of a task's registration (`robench.tasks.registry.TaskEntry`):
    what its models read, and its `Task` class (`logits`, `classifies`)."""

    @property
    def inputs(self) -> str: ...  # "images", "tokens" or "texts"
    def load(self) -> Any: ...


@dataclass(frozen=True)
class _Task:
    """A task as this source uses it."""

    inputs: str  # what its models read: how a module is wrapped, what blank inputs are
    logits: tuple[int, str]  # dimensions of its logits and their shape in words
    classifies: bool  # logits per class along dimension 1: the class count is read off them


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


def _exact(device: torch.device) -> torch.device:
    """`cuda` as the CUDA device it means now (`cuda:N`, N the current one)."""
    if device.type == "cuda" and device.index is None and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return device


def check_device(module: nn.Module, device: torch.device | str) -> None:
    """Every parameter and buffer must be on `device`, index included: robench does not move
    the caller's model, and batches go to `device`."""
    wanted = _exact(torch.device(device))
    found = {_exact(t.device): None for t in [*module.parameters(), *module.buffers()]}
    if len(found) > 1:
        first, second = list(found)[:2]
        raise ConfigError(
            f"the model has parameters or buffers on {first} and on {second}; robench "
            "evaluates a model on one device: move all of it there first (model.to(DEVICE))."
        )
    for here in found:
        if here != wanted:
            raise ConfigError(
                f"the model is on {here} but device={str(wanted)!r}; move it first "
                f"(model.to({str(wanted)!r})) or pass device={str(here)!r}."
            )


def _image_spec(module: nn.Module, options: MemoryOptions) -> tuple[ModelSpec, ModelSpec | None]:
    """(the caller's layer, the model's own layer: None for timm's pretrained_cfg)."""
    given = given_spec(options.preprocessing, options.keyword)
    if given.input_size is None and options.data_size is not None:
        given = given.model_copy(update={"input_size": options.data_size})
    if isinstance(getattr(module, "pretrained_cfg", None), Mapping):
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


def _image_model(module: nn.Module, task: str, request: SourceRequest) -> LoadedModel:
    """An image network: normalisation inside, the caller's preprocessing over its own (read
    before a `robench_inference` wrapper, mmseg's test mode, hides its pretrained_cfg)."""
    options = request.memory
    given, own = _image_spec(module, options)
    cfg = pretrained_cfg_spec(module)
    inference = getattr(module, "robench_inference", None)
    return image_model(
        **_named(module, options),
        network=module if inference is None else with_inference(module, inference),
        overrides=given,
        kwargs={},
        own=cfg if own is None else own,
        own_label="timm pretrained_cfg" if own is None else "pixels in [0, 1]",
        task=task,
        classes=cfg.classes,
        device=request.device,
        overrides_label=f"{options.keyword}=",
    )


def _text_model(module: nn.Module, task: str, request: SourceRequest) -> LoadedModel:
    raise ConfigError(
        f"{type(module).__name__} is evaluated on {task}, whose models read texts; pass a "
        "transformers model, or a robench model with tokenizer= its Vocabulary."
    )


# What a task's models read (`TaskEntry.inputs`) -> how a plain module of it is wrapped.
WRAPPERS: dict[str, Callable[[nn.Module, str, SourceRequest], LoadedModel]] = {
    "images": _image_model,
    # token ids as they are (B, L), or pairs (B, 2, L): an LRA model
    "tokens": lambda module, task, request: _as_it_is(module, module, task, request),
    "texts": _text_model,
}


def _word_level_model(module: nn.Module, request: SourceRequest) -> LoadedModel:
    """A robench zoo model reading the words of a `Vocabulary` (tokenizer=): token ids as
    they are, or texts through a `WordLevelTextClassifier` when its task reads texts."""
    from robench.models.text_inputs import WordLevelTextClassifier

    options = request.memory
    task = options.task or getattr(module, "robench_task", None) or "language-modeling"
    network: nn.Module = module
    if _task(options, task).inputs == "texts":
        network = WordLevelTextClassifier(module, options.tokenizer)
    return _as_it_is(module, network, task, request, vocabulary=options.tokenizer)


def _as_it_is(
    module: nn.Module, network: nn.Module, task: str, request: SourceRequest, vocabulary: Any = None
) -> LoadedModel:
    """The LoadedModel of a zoo module held in memory that takes its inputs as they are (no
    image preprocessing): `network` is what runs, `module` what its provenance names."""
    return text_model(
        network,
        task=task,
        device=request.device,
        vocabulary=vocabulary,
        **_named(module, request.memory),
    )


def _named(module: nn.Module, options: MemoryOptions) -> dict[str, Any]:
    """The name, architecture and provenance of a module held in memory."""
    return dict(
        name=options.name or type(module).__name__,
        architecture=class_path(module),
        origin=memory_origin(module, {"model_name": options.name} if options.name else None),
    )


def _transformers_model(module: nn.Module, request: SourceRequest) -> LoadedModel:
    from robench.models.sources.hf_objects import (
        BUILDERS,
        HFObjectRequest,
        transformers_object_task,
    )

    options = request.memory
    found = options.task or transformers_object_task(module)
    if found is None or found not in BUILDERS:
        raise ConfigError(
            f"{type(module).__name__} is a transformers model robench cannot evaluate; it "
            "evaluates image classifiers, semantic segmentation models, causal language models "
            "and sequence classifiers (or pass task=)."
        )
    extra = {"library": "transformers", **({"model_name": options.name} if options.name else {})}
    hf_request = HFObjectRequest(
        model=module,
        name=options.name or type(module).__name__,
        origin=memory_origin(module, extra),
        given=given_spec(options.preprocessing, options.keyword),
        processor=options.image_processor,
        tokenizer=options.tokenizer,
        device=request.device,
    )
    return BUILDERS[found](hf_request)


def _task(options: MemoryOptions, name: str) -> _Task:
    if options.tasks is None:
        raise ConfigError(
            f"the memory source needs the task registry to wrap a model of {name}; pass "
            "MemoryOptions(tasks=robench.tasks.TASKS.get)."
        )
    entry: TaskEntry = options.tasks(name)
    implementation = entry.load()
    return _Task(entry.inputs, implementation.logits, implementation.classifies)


def _module_model(module: nn.Module, request: SourceRequest) -> LoadedModel:
    """A module of robench's or the caller's: by what its task's models read."""
    options = request.memory
    declared = options.task or getattr(module, "robench_task", None) or options.suite_task
    task = declared or _IMAGE_CLASSIFICATION
    loaded = WRAPPERS[_task(options, task).inputs](module, task, request)
    if declared is None and _output_dims(loaded, "images") == 4:  # per-pixel logits
        loaded = replace(loaded, task="semantic-segmentation")
    return loaded


def from_memory(request: SourceRequest) -> LoadedModel:
    """The source's builder: the object as a LoadedModel of its task (see the module
    docstring), its outputs checked on blank inputs unless `memory.check_outputs` is off."""
    from robench.data.text.vocabulary import Vocabulary
    from robench.models.sources.hf_objects import is_transformers_model

    module, options = request.model, request.memory
    if not isinstance(module, nn.Module):
        raise ConfigError(
            f"model= is a {type(module).__name__}; pass a model name (as `robench eval` takes "
            "it) or a torch nn.Module (timm, transformers or your own)."
        )
    if request.device is None:  # the device follows the model
        request = replace(request, device=module_device(module))
    check_device(module, request.device)
    if is_transformers_model(module):
        loaded = _transformers_model(module, request)
    elif isinstance(options.tokenizer, Vocabulary):
        loaded = _word_level_model(module, request)
    else:
        loaded = _module_model(module, request)
    return check_outputs(loaded, _task(options, loaded.task)) if options.check_outputs else loaded


# What a forward pass on inputs of the wrong size or kind raises.
_FORWARD_ERRORS = (RuntimeError, ValueError, TypeError, IndexError, AttributeError)


def _blank_inputs(loaded: LoadedModel, inputs: str) -> torch.Tensor:
    """Two blank inputs of what the model reads (images: of the model's input size)."""
    device = next(loaded.model.parameters(), torch.empty(0)).device
    if loaded.preprocessing is not None:
        return torch.zeros(2, *loaded.preprocessing.input_size, device=device)
    if inputs == "texts":
        from robench.data.text.text_rows import encode_rows

        return encode_rows(["a text", "another text"]).to(device)
    pair = (2,) if getattr(loaded.model, "pair", False) else ()  # retrieval pairs (B, 2, L)
    return torch.zeros(2, *pair, 8, dtype=torch.long, device=device)


def _output_dims(loaded: LoadedModel, inputs: str) -> int:
    """The dimensions of the model's output on blank inputs; -1 when it returns no tensor
    or cannot run on them (`check_outputs` then says so in one sentence)."""
    try:
        with torch.no_grad():
            found = loaded.model(_blank_inputs(loaded, inputs))
    except _FORWARD_ERRORS:
        return -1
    return found.dim() if isinstance(found, torch.Tensor) else -1


def check_outputs(loaded: LoadedModel, task: _Task) -> LoadedModel:
    """One forward pass on blank inputs: the model must return logits of its task's shape
    (`task.logits`). Records the number of classes of a classifier or segmenter."""
    inputs = _blank_inputs(loaded, task.inputs)
    dims, shape = task.logits
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
    if task.classifies and loaded.spec.num_classes is None:
        loaded.spec = loaded.spec.model_copy(update={"num_classes": int(found.shape[1])})
    return loaded
