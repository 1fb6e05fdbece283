"""Build the model a user asked for: registered architecture, safe checkpoint, preprocessing.

`load_model(MODEL)` builds every kind a user gives with the first source of the one ordered
table that takes it (docs/architecture.md, "Model sources"). This module is the last of them,
`named`: image classifiers are timm models; language models, text and LRA classifiers are
robench's own registry (`robench.models.zoo.lm_registry`), sized by their checkpoint's
vocabulary or model kwargs. The sources' image classifiers come back through `image_model`.

Each preprocessing field comes from the first source that gives it, in this order: command
line flags, a model card, the metadata `robench train` stores in a checkpoint, timm's
`pretrained_cfg`. A model with no known mean/std is an error: robench never guesses.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import timm
import torch
from torch import nn

import robench.models.zoo  # noqa: F401  (registers robench's models with timm)
from robench._core.errors import CheckpointError, ConfigError
from robench._core.plugins import load_plugins
from robench.data.preprocessing import Preprocessing
from robench.models.checkpoints import Checkpoint, load_state_dict_into, read_checkpoint
from robench.models.loaded_model import LoadedModel
from robench.models.names import unknown_model_message
from robench.models.normalization import NormalizedModel
from robench.models.provenance import ModelOrigin
from robench.models.sliding_window import with_inference
from robench.models.sources.registry import MemoryOptions, SourceRequest, resolve_source
from robench.models.spec import ModelCard, ModelSpec, bundled_cards, read_card, spec_from_metadata

if TYPE_CHECKING:
    from robench.data.text import Vocabulary

logger = logging.getLogger(__name__)

_PREPROCESSING_FIELDS = ("input_size", "mean", "std", "interpolation", "crop_pct")
_SPEC_FIELDS = set(ModelSpec.model_fields) - {"model_kwargs"}


def _find_card(name: str | None) -> tuple[ModelCard, Path] | tuple[None, None]:
    if name is None:
        return None, None
    if name.endswith(".toml"):
        path = Path(name)
        if not path.is_file():
            raise ConfigError(f"model card {name} does not exist; check the path.")
        return read_card(path), path
    cards = bundled_cards()
    if name in cards:
        return read_card(cards[name]), cards[name]
    return None, None


def _layer(sources: list[tuple[str, ModelSpec | None]]) -> tuple[ModelSpec, dict[str, str]]:
    """Merge specs, earlier sources winning field by field; record each field's source."""
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for label, spec in sources:
        if spec is None:
            continue
        for key, value in spec.model_dump(include=_SPEC_FIELDS).items():
            if value is not None and key not in merged:
                merged[key] = value
                origin[key] = label
    kwargs: dict[str, Any] = {}
    for _, spec in reversed(sources):
        if spec is not None:
            kwargs.update(spec.model_kwargs)
    return ModelSpec(model_kwargs=kwargs, **merged), origin


def _create(architecture: str, num_classes: int | None, kwargs: dict[str, Any]) -> nn.Module:
    if not timm.is_model(architecture):
        raise ConfigError(unknown_model_message(architecture))
    extra = dict(kwargs)
    if num_classes is not None:
        extra["num_classes"] = num_classes
    try:
        return timm.create_model(architecture, pretrained=False, **extra)
    except TypeError as exc:
        raise ConfigError(
            f"model {architecture!r} rejected its arguments {extra}: {exc}."
        ) from None


def pretrained_cfg_spec(model: nn.Module) -> ModelSpec:
    """The preprocessing and class names timm's `pretrained_cfg` gives (the one reader of
    it; empty fields for another module)."""
    cfg = dict(getattr(model, "pretrained_cfg", None) or {})
    fields: dict[str, Any] = {key: cfg.get(key) for key in _PREPROCESSING_FIELDS}
    fields["classes"] = list(cfg["label_names"]) if cfg.get("label_names") else None
    return ModelSpec.model_validate(
        {k: (tuple(v) if isinstance(v, list) else v) for k, v in fields.items()}
    )


def _preprocessing(
    spec: ModelSpec, name: str, resize: dict[str, str] | None = None
) -> tuple[Preprocessing, tuple[float, ...], tuple[float, ...]]:
    if spec.input_size is None:
        raise ConfigError(
            f"no input size is known for model {name!r}; pass --input-size C,H,W "
            "(for example 3,224,224) or use a model card."
        )
    if spec.mean is None or spec.std is None:
        raise ConfigError(
            f"no normalisation (mean/std) is known for model {name!r}; pass --mean and --std "
            "(per channel, pixel units in [0, 1]) or use a model card: robench never guesses."
        )
    channels = spec.input_size[0]
    if len(spec.mean) != channels or len(spec.std) != channels:
        raise ConfigError(
            f"mean {list(spec.mean)} and std {list(spec.std)} must have one value per input "
            f"channel ({channels}); fix --mean/--std or --input-size."
        )
    if any(s <= 0 for s in spec.std):
        raise ConfigError(f"std {list(spec.std)} must be positive; fix --std.")
    preprocessing = Preprocessing(
        input_size=spec.input_size,
        interpolation=spec.interpolation or "bicubic",
        crop_pct=spec.crop_pct if spec.crop_pct is not None else 1.0,
        resize_mode=(resize or {}).get("resize_mode", "shorter"),
        backend=(resize or {}).get("backend", "pil"),
    )
    return preprocessing, spec.mean, spec.std


def image_model(
    name: str,
    architecture: str,
    network: nn.Module,
    *,
    overrides: ModelSpec | None,
    kwargs: dict[str, Any],
    origin: ModelOrigin,
    classes: list[str] | None = None,
    own: ModelSpec | None = None,
    own_label: str = "timm pretrained_cfg",
    resize: dict[str, str] | None = None,
    device: torch.device | str = "cpu",
    overrides_label: str = "command line",
    task: str = "image-classification",
) -> LoadedModel:
    """A source's image model of `task`, normalisation inside: the command line's
    preprocessing (`overrides`, or what `overrides_label` names) over the model's own (`own`,
    else timm's `pretrained_cfg`)."""
    own = own if own is not None else pretrained_cfg_spec(network)
    own = own.model_copy(update={"classes": None})  # the class names are `classes`
    spec, sources = _layer([(overrides_label, overrides), (own_label, own)])
    spec = spec.model_copy(update={"architecture": architecture, "classes": classes})
    preprocessing, mean, std = _preprocessing(spec, name, resize)
    return LoadedModel(
        model=NormalizedModel(network, mean, std).to(device).eval(),
        name=name,
        architecture=architecture,
        model_kwargs=kwargs,
        spec=spec,
        sources=sources,
        preprocessing=preprocessing,
        origin=origin,
        task=task,
    )


def _card_and_checkpoint(
    name: str | None, checkpoint: Path | None, ema: bool, trust: bool
) -> tuple[ModelCard | None, Path | None, Checkpoint | None]:
    """MODEL's card (if it names one) and the checkpoint read: `--checkpoint`, else the
    card's, whose sha256 must then be the one the card records."""
    card, card_path = _find_card(name)
    expected = None
    if checkpoint is None and card is not None and card_path is not None:
        if card.checkpoint is not None:
            checkpoint = (card_path.parent / card.checkpoint).resolve()
        expected = card.checkpoint_sha256
    ckpt = read_checkpoint(checkpoint, ema=ema, trust=trust) if checkpoint else None
    if ckpt is not None and expected and ckpt.sha256 != expected:
        raise CheckpointError(
            f"checkpoint {checkpoint} has sha256 {ckpt.sha256[:12]}..., but model card "
            f"{card_path} expects {expected[:12]}...; the file changed."
        )
    return card, card_path, ckpt


def load_model(
    model: Any = None,
    *,
    checkpoint: Path | None = None,
    overrides: ModelSpec | None = None,
    imports: tuple[str, ...] = (),
    ema: bool = False,
    trust_checkpoint: bool = False,
    trust_remote_code: bool = False,
    device: torch.device | str | None = "cpu",
    memory: MemoryOptions | None = None,
) -> LoadedModel:
    """MODEL as a ready model, built by the first source of the table that takes it (the
    module docstring); `memory` tells the `memory` source about a model object. `device`
    None: a model object's own device, cpu for anything else."""
    load_plugins(imports)
    source, target = resolve_source(model, checkpoint=checkpoint is not None)
    name = model if isinstance(model, str) else ""
    if device is None and source.stage != "object":
        device = "cpu"
    if source.stage in ("prefix", "claim"):
        _refuse_checkpoint_options(name, source.prefix, source.where, checkpoint, ema)
    request = SourceRequest(
        name,
        target,
        overrides,
        trust_remote_code,
        trust_checkpoint,
        device=device,
        checkpoint=checkpoint,
        ema=ema,
        model=model if source.stage == "object" else None,
        memory=memory or MemoryOptions(),
    )
    return source.build(request)


def from_name(request: SourceRequest) -> LoadedModel:
    """The `named` source: MODEL's card, a registered architecture (robench's zoo or timm)
    and its checkpoint, each preprocessing field from the first that gives it."""
    name, checkpoint, device = request.target, request.checkpoint, request.device
    overrides, ema, trust_checkpoint = request.overrides, request.ema, request.trust_checkpoint
    card, card_path, ckpt = _card_and_checkpoint(name, checkpoint, ema, trust_checkpoint)
    meta = spec_from_metadata(ckpt.metadata, ckpt.path) if ckpt else None

    cli_spec = overrides or ModelSpec()
    named = ModelSpec(architecture=name) if name is not None and card is None else None
    spec, sources = _layer(
        [
            ("command line", cli_spec),
            ("model card", card),
            ("command line", named),
            ("checkpoint metadata", meta),
        ]
    )
    if spec.architecture is None:
        raise ConfigError(
            "no MODEL was given and the checkpoint carries no robench metadata; pass a "
            "registered model name (see `robench list models`) or a model card."
        )
    architecture = spec.architecture
    from robench.models.zoo.lm_registry import is_language_model, language_model_task

    vocabulary = None
    preprocessing: Preprocessing | None = None
    lm_task = language_model_task(architecture) if is_language_model(architecture) else None
    if lm_task == "sequence-classification":
        network = _sequence_classifier(architecture, spec)
    elif lm_task is not None:
        network, vocabulary = _language_model(architecture, spec, ckpt)
    else:
        network = _create(architecture, spec.num_classes, spec.model_kwargs)
        spec, sources = _fill_from_cfg(spec, sources, network)
        preprocessing, mean, std = _preprocessing(spec, name or architecture)
    if ckpt is not None:
        load_state_dict_into(network, ckpt.state_dict, model_name=architecture)
    task, declared = _task_of(network, vocabulary)  # before the wrapper hides the attribute
    if task == "text-classification" and vocabulary is not None:
        from robench.models.text_inputs import WordLevelTextClassifier

        network = WordLevelTextClassifier(network, vocabulary)
        spec = spec.model_copy(update={"classes": spec.classes or _checkpoint_classes(ckpt)})
    inference = getattr(network, "robench_inference", None)
    if inference is not None:  # the test mode it is evaluated with (mmseg's whole or slide)
        network = with_inference(network, inference)
    if preprocessing is not None:  # an image model: normalisation inside the model
        network = NormalizedModel(network, mean, std)
    return LoadedModel(
        model=network.to(device).eval(),
        name=name or architecture,
        architecture=architecture,
        model_kwargs=spec.model_kwargs,
        spec=spec,
        sources=sources,
        card_path=card_path,
        checkpoint=ckpt,
        preprocessing=preprocessing,
        task=task,
        task_declared=declared,
        vocabulary=vocabulary,
    )


def _task_of(network: nn.Module, vocabulary: Any) -> tuple[str, bool]:
    """The model's task and whether it declared it: a language model's; the one the network
    names (`robench_task`, as robench's Segmenters and smp models do); else image
    classification, undeclared."""
    declared = getattr(network, "robench_task", None)
    if declared:
        return str(declared), True
    if vocabulary is not None:
        return "language-modeling", True
    return "image-classification", False


def _checkpoint_classes(ckpt: Checkpoint | None) -> list[str] | None:
    """The class names a text classifier's checkpoint carries (data/text/classifier_tokens)."""
    from robench.data.text.classifier_tokens import classes_from_metadata

    classes = classes_from_metadata(ckpt.metadata) if ckpt is not None else None
    return list(classes) if classes else None


def _fill_from_cfg(
    spec: ModelSpec, sources: dict[str, str], network: nn.Module
) -> tuple[ModelSpec, dict[str, str]]:
    """The preprocessing fields nothing gave, from timm's `pretrained_cfg` (validated there)."""
    cfg = pretrained_cfg_spec(network).model_dump(include=set(_PREPROCESSING_FIELDS))
    found = {k: v for k, v in cfg.items() if v is not None and getattr(spec, k) is None}
    sources.update(dict.fromkeys(found, "timm pretrained_cfg"))
    return spec.model_copy(update=found), sources


def _language_model(
    architecture: str, spec: ModelSpec, ckpt: Checkpoint | None
) -> tuple[nn.Module, Vocabulary]:
    """A registered language model sized by its checkpoint's vocabulary (its output size)."""
    from robench.data.text import Vocabulary
    from robench.models.zoo.lm_registry import create_language_model

    vocabulary = Vocabulary.from_metadata(ckpt.metadata) if ckpt is not None else None
    if ckpt is None:
        raise ConfigError(
            f"{architecture} needs a vocabulary: pass --checkpoint with one (written by "
            "`robench train`)."
        )
    if vocabulary is None:
        raise CheckpointError(
            f"checkpoint {ckpt.path} carries no vocabulary, so robench cannot map text to "
            f"{architecture}'s token ids; use a checkpoint written by `robench train` (it "
            "stores the training vocabulary in its metadata)."
        )
    kwargs = {**spec.model_kwargs, "vocab_size": len(vocabulary)}
    classes = _checkpoint_classes(ckpt)
    if classes and "num_classes" not in kwargs:  # a text classifier: sized by its classes
        kwargs["num_classes"] = len(classes)
    return create_language_model(architecture, **kwargs), vocabulary


def _sequence_classifier(architecture: str, spec: ModelSpec) -> nn.Module:
    """A registered sequence classifier (LRA): its vocabulary size, classes, maximum length
    and padding id are model kwargs, which `robench train` stores in the checkpoint."""
    from robench.models.zoo.lm_registry import create_language_model

    kwargs = dict(spec.model_kwargs)
    if "vocab_size" not in kwargs:
        raise ConfigError(
            f"{architecture} needs its vocabulary size: pass --checkpoint with one written by "
            '`robench train`, or --model-kwargs \'{"vocab_size": V, "num_classes": K}\'.'
        )
    if spec.num_classes is not None:
        kwargs["num_classes"] = spec.num_classes
    return create_language_model(architecture, **kwargs)


def _refuse_checkpoint_options(
    name: str, prefix: str, where: str, checkpoint: Path | None, ema: bool
) -> None:
    """A source loads its own weights: --checkpoint and --ema would be ignored."""
    if checkpoint is not None:
        raise ConfigError(
            f"{name} loads its weights from its {prefix} source, so --checkpoint {checkpoint} "
            "would be ignored; drop one of the two."
        )
    if ema:
        raise ConfigError(
            f"{name} loads its weights from {where}, not from a training checkpoint with EMA "
            "weights, so --ema would be ignored; drop --ema."
        )
