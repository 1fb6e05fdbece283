"""Things imported on first use: registry entries named by a "module:attribute" path, and
lazy re-exports for package `__init__` files (PEP 562), which keep `import robench` and the
light command-line paths free of torch while the packages still offer their public names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from robench._core.errors import ConfigError, first_line


def import_object(path: str) -> Any:
    """The object a "package.module:attribute" path names, its module imported now."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class LazyEntry:
    """A registered name and where its implementation lives, imported by `load()`: the lazy
    form of every registry a plugin extends; subclasses add fields (a kind's schema)."""

    name: str
    target: str  # "package.module:attribute"

    def load(self) -> Any:
        """The implementation, its module imported now; a path that is not there (a plugin's
        mistake) is one ConfigError."""
        try:
            return import_object(self.target)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                f"{self.name!r} is registered as {self.target!r}, which cannot be imported "
                f"({type(exc).__name__}: {first_line(exc)}); install the module the plugin "
                "needs, or fix the path it registered."
            ) from None


def lazy_exports(package: str, sources: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `name` when first asked for from `sources[name]`,
    a module or a "module:attribute" path (a re-export under another name)."""

    def __getattr__(name: str) -> Any:
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        source = sources[name]
        if ":" in source:
            return import_object(source)
        return getattr(importlib.import_module(source), name)

    return __getattr__
