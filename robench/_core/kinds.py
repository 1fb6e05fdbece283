"""Kinds registered by their parameter schema, with the implementation imported on demand:
robench validates suites and lists parameters (`pgd`, `collapse`) without importing torch or
any attack library; `load()` (`LazyEntry`) imports the class when a run first needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from robench._core.lazy import LazyEntry
from robench._core.registry import Registry

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class LazyKind(LazyEntry, Generic[M]):
    """A registered kind: a `LazyEntry` with its parameter schema."""

    Params: type[M]

    @property
    def description(self) -> str:
        return (self.Params.__doc__ or "").strip().splitlines()[0]


P = TypeVar("P", bound=type[BaseModel])


def kind_registrar(registry: Registry[LazyKind[M]]) -> Callable[[str, str], Callable[[P], P]]:
    """A class decorator factory: `@register("name", "module:Class")` on a parameter schema."""

    def register(name: str, implementation: str) -> Callable[[P], P]:
        def decorate(params: P) -> P:
            registry.register(name)(LazyKind(name, implementation, params))  # type: ignore[arg-type]
            return params

        return decorate

    return register
