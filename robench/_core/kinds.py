"""Kinds registered by their parameter schema, with the implementation imported on demand.

A suite names a kind (`pgd`, `collapse`) and its parameters. Registering the pydantic schema
with the dotted path of the class that implements it lets robench validate suites and list
parameters without importing torch or any attack library; `load()` (`LazyEntry`) imports
the class when a run first needs it.
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
    """A registered kind: its name, where its implementation lives ("package.module:Class")
    and its parameter schema."""

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
