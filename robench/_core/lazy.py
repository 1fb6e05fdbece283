"""Lazy re-exports for package `__init__` files (PEP 562): a name is imported on first use.

This keeps `import robench` and the light command-line paths free of torch while the
packages still offer their public names at the top.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def import_object(path: str) -> Any:
    """The object a "package.module:attribute" path names, its module imported now."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def lazy_exports(package: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `name` from `sources[name]` when first asked for."""

    def __getattr__(name: str) -> Any:
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(sources[name]), name)

    return __getattr__
