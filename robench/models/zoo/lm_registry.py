"""robench's registry of language models, in timm's decorator style (docs/language-models.md,
"Registering a model"; a plugin registers its own with `register_language_model`).

A builder takes the vocabulary size and keyword overrides and returns an `nn.Module` mapping
token ids (B, T) to next-token logits (B, T, vocab_size). A builder whose function carries a
`robench_task` attribute builds a model of that task instead (robench's text classifiers:
"text-classification", `num_classes` a keyword); `language_model_task(name)` reads it without
building the model. Importing this module registers nothing and imports neither torch nor timm.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from robench._core.errors import ConfigError
from robench._core.registry import Registry

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "LanguageModelBuilder",
    "create_language_model",
    "is_language_model",
    "language_model_task",
    "list_language_models",
    "register_language_model",
    "register_variants",
]

# (vocab_size, **kwargs) -> model
LanguageModelBuilder = Callable[..., "nn.Module"]

_LANGUAGE_MODELS: Registry[LanguageModelBuilder] = Registry("language model")


def register_language_model(builder: LanguageModelBuilder) -> LanguageModelBuilder:
    """Decorator: register `builder` under its function name; returns it unchanged. The same
    builder again (its module imported a second time in one process, as `--import` of one file
    by two evaluations does) replaces the entry; another of that name is a ValueError."""
    name = builder.__name__
    if name in _LANGUAGE_MODELS:
        known = _LANGUAGE_MODELS.get(name)
        if (known.__module__, known.__qualname__) == (builder.__module__, builder.__qualname__):
            _LANGUAGE_MODELS.unregister(name)  # the same plugin imported again in this process
    return _LANGUAGE_MODELS.register()(builder)


def register_variants(
    module: str,
    create: Callable[..., nn.Module],
    variants: Mapping[str, dict[str, Any]],
    task: str | None = None,
) -> dict[str, LanguageModelBuilder]:
    """Register, for every `variants` entry (model name -> its arguments), a builder of the
    model and one of its `NAME_elliptical` twin that call `create(name, vocab_size,
    elliptical, kwargs laid over the arguments)`, marked as models of `task` (None: language
    modelling); returns them by name, for `module`'s globals."""
    builders = {}
    for base, arguments in variants.items():
        for name, elliptical in ((base, False), (f"{base}_elliptical", True)):
            builder = _variant(create, name, elliptical, arguments)
            builder.__module__ = module
            if task is not None:  # what `language_model_task` reads
                builder.robench_task = task  # type: ignore[attr-defined]
            builders[name] = register_language_model(builder)
    return builders


def _variant(
    create: Callable[..., nn.Module], name: str, elliptical: bool, arguments: dict[str, Any]
) -> LanguageModelBuilder:
    def builder(vocab_size: int, **kwargs: Any) -> nn.Module:
        return create(name, vocab_size, elliptical, dict(arguments, **kwargs))

    builder.__name__ = builder.__qualname__ = name
    return builder


def create_language_model(name: str, vocab_size: int, **kwargs: Any) -> nn.Module:
    """Build the registered language model `name` over `vocab_size` tokens, `kwargs` over the
    builder's defaults (e.g. `dropout=0.0`, elliptical options); a ConfigError when `name` is
    not registered (with close matches) or the builder does not accept `kwargs`."""
    builder = _LANGUAGE_MODELS.get(name)
    try:
        return builder(vocab_size, **kwargs)
    except TypeError as err:
        raise ConfigError(
            f"language model {name!r} does not accept the arguments {sorted(kwargs)} "
            f"({err}); check their names against the model's builder."
        ) from err


def is_language_model(name: str) -> bool:
    """True when `name` is a registered language model."""
    return name in _LANGUAGE_MODELS


def language_model_task(name: str) -> str:
    """The task of the registered model `name`: its builder's `robench_task` attribute
    ("text-classification" for the zoo's text classifiers), else "language-modeling"; a
    ConfigError when `name` is not registered (with close matches)."""
    return getattr(_LANGUAGE_MODELS.get(name), "robench_task", "language-modeling")


def list_language_models(pattern: str = "*") -> list[str]:
    """Registered language model names matching the shell-style `pattern`, sorted."""
    return [name for name in _LANGUAGE_MODELS.names() if fnmatch.fnmatch(name, pattern)]
