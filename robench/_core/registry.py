"""A generic name -> object registry with did-you-mean errors.

Every catalogue in robench (models, perturbations, metrics, table formats) is an instance,
so lookups and error messages behave the same everywhere.
"""

from __future__ import annotations

import difflib
import enum
import fnmatch
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from robench._core.errors import ConfigError

T = TypeVar("T")


def did_you_mean(name: str, choices: list[str], what: str) -> str:
    """One sentence naming the unknown `name`, close matches and what is available."""
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    shown = ", ".join(sorted(choices)[:20]) + (", ..." if len(choices) > 20 else "")
    return f"Unknown {what} {name!r}.{hint} Available: {shown}."


class Registry(Generic[T]):
    """Maps names to objects; register with `@registry.register()` on a builder. A costly
    catalogue (the torchattacks kinds) is added by a loader (`add_loader`), run on the first
    listing or unknown name, so lookups of other names stay instant."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._items: dict[str, T] = {}
        self._loaders: list[Callable[[], object]] = []

    def add_loader(self, loader: Callable[[], object]) -> None:
        """Run `loader()` (which registers entries) on the first listing or unknown name."""
        self._loaders.append(loader)

    def _load_pending(self) -> None:
        while self._loaders:
            self._loaders.pop(0)()

    def register(self, name: str | None = None) -> Callable[[T], T]:
        """Decorator; the key defaults to the decorated object's `__name__`."""

        def decorator(obj: T) -> T:
            key = name or getattr(obj, "__name__", None)
            if not key:
                raise TypeError(f"cannot infer a {self.what} name for {obj!r}; pass name=")
            if key in self._items:
                raise ValueError(f"{self.what} {key!r} is already registered")
            self._items[key] = obj
            return obj

        return decorator

    def get(self, name: str) -> T:
        if name not in self._items:
            self._load_pending()
        try:
            return self._items[name]
        except KeyError:
            raise ConfigError(did_you_mean(name, list(self._items), self.what)) from None

    def names(self, pattern: str | None = None) -> list[str]:
        self._load_pending()
        names = sorted(self._items)
        return [n for n in names if self.matches(n, pattern)] if pattern else names

    @staticmethod
    def matches(name: str, pattern: str) -> bool:
        """Shell-style match; a pattern without wildcards matches as a substring."""
        if not any(c in pattern for c in "*?["):
            return pattern in name
        return fnmatch.fnmatch(name, pattern)

    def choices(self, class_name: str) -> type[enum.Enum]:
        """A str enum of the registered names, for command-line choice lists (typer)."""
        return enum.Enum(class_name, {name: name for name in self.names()}, type=str)  # type: ignore[return-value]

    def unregister(self, name: str) -> None:
        """Forget `name` (a plugin module imported again re-registers its objects)."""
        del self._items[name]

    def __contains__(self, name: object) -> bool:
        if name not in self._items:
            self._load_pending()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self._load_pending()
        return len(self._items)
