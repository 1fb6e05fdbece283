"""An output format: how a command renders its result, and which files it is written to.

`robench compare` and `robench gate` each keep their formats in one `Registry` of
`OutputFormat`s; their command lines build the `--format` choices from the registry and pick
a format from an `--output` file's suffix with `format_for_suffix`, so a new format is one
registration and nothing in the CLI changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from robench._core.registry import Registry


@dataclass(frozen=True)
class OutputFormat:
    """A rendering (`render(result, ...)`) and the file suffixes that select it."""

    render: Callable[..., object]
    # Lower-case file suffixes, the first one canonical (".md"); none: terminal only (rich).
    suffixes: tuple[str, ...] = ()

    def __call__(self, *args: Any, **kwargs: Any) -> object:
        return self.render(*args, **kwargs)


def register_format(
    registry: Registry[OutputFormat], name: str, *suffixes: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the rendering function under `name` with its file suffixes; the
    function itself is returned unchanged, for direct calls."""

    def decorator(render: Callable[..., Any]) -> Callable[..., Any]:
        registry.register(name)(OutputFormat(render, tuple(s.lower() for s in suffixes)))
        return render

    return decorator


def format_for_suffix(registry: Registry[OutputFormat], suffix: str) -> str | None:
    """The name of the format written to files ending in `suffix` (any case), if any."""
    return next((n for n in registry.names() if suffix.lower() in registry.get(n).suffixes), None)


def file_formats(registry: Registry[OutputFormat]) -> list[str]:
    """The names of the formats that can be written to a file, in registry order."""
    return [name for name in registry.names() if registry.get(name).suffixes]
