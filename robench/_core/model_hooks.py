"""Hooks a model's modules may provide, so the engine reaches model-specific behaviour without
importing the model's code: the engine walks `model.modules()` and uses what a module offers,
duck-typed by name; a model without such modules is evaluated as is. What each hook does:
docs/architecture.md, "Model hooks".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

ADAPTIVE_HOOK = "robench_adaptive_attack"
REPORT_HOOK = "robench_report_section"
TOKEN_ENCODER_HOOK = "robench_token_encoder"


def _modules(model: Any) -> Iterable[Any]:
    return model.modules() if hasattr(model, "modules") else ()


def supports_adaptive_attack(model: Any) -> bool:
    """True when some module of `model` changes under an adaptive attack."""
    return any(callable(getattr(m, ADAPTIVE_HOOK, None)) for m in _modules(model))


@contextlib.contextmanager
def adaptive_attack(model: Any) -> Iterator[None]:
    """Enter every module's adaptive-attack hook (a no-op for a model without one)."""
    with contextlib.ExitStack() as stack:
        for module in _modules(model):
            hook = getattr(module, ADAPTIVE_HOOK, None)
            if callable(hook):
                stack.enter_context(hook())
        yield


def report_sections(model: Any) -> dict[str, dict[str, Any]]:
    """The report's model extensions: one section per module class that has the hook."""
    by_class: dict[type, list[Any]] = {}
    for module in _modules(model):
        if callable(getattr(type(module), REPORT_HOOK, None)):
            by_class.setdefault(type(module), []).append(module)
    sections: dict[str, dict[str, Any]] = {}
    for cls, modules in by_class.items():
        name, section = getattr(cls, REPORT_HOOK)(modules)
        sections[name] = section
    return sections


def token_encoders(model: Any) -> list[Any]:
    """The modules that modules of `model` name as their token encoder, in module order."""
    found: list[Any] = []
    for module in _modules(model):
        hook = getattr(module, TOKEN_ENCODER_HOOK, None)
        if callable(hook):
            encoder = hook()
            if all(encoder is not known for known in found):
                found.append(encoder)
    return found
