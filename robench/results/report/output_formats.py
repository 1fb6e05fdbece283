"""Output formats: how a command renders its result, and which files it is written to.

One table, `OUTPUT_FORMATS`, holds a `Registry` of `OutputFormat`s per kind of result:

- `report`: one `Report`, `render(report)`; `robench eval --format`;
- `compare`: a `Comparison`, `render(cmp, ci)` (html also takes `gate=`); `robench compare
  --format`;
- `per-corruption`: a `PerCorruption` table, `render(table)`; `compare --per-corruption`;
- `gate`: a `GateResult`, `render(result, strict)`; `robench gate --summary/--junit/--json`,
  and any of them by name with `robench gate --output NAME=PATH`.

A format is registered with `@register_format(kind, name, *suffixes)` on its rendering
function (robench's own in `results/compare/tables.py`, `results/compare/formats.py`,
`results/compare/per_corruption.py`, `results/gate/formats.py`, which re-export their
registry: import it from there, where it is filled; a plugin's through
`robench.registry.register_format`). How the commands pick one: docs/architecture.md, "A
command line that answers at once".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from robench._core.errors import ConfigError, PluginError
from robench._core.plugins import call_plugin, defined_in
from robench._core.registry import Registry, did_you_mean


@dataclass(frozen=True)
class OutputFormat:
    """A rendering (`render(result, ...)`) and the file suffixes that select it."""

    render: Callable[..., object]
    # Lower-case file suffixes, the first one canonical (".md"); none: terminal only (rich).
    suffixes: tuple[str, ...] = ()
    name: str = ""  # "gate output format 'tsv'", for errors

    def __call__(self, *args: Any, **kwargs: Any) -> object:
        """The rendering; a renderer that raises or returns nothing (a plugin's) is one
        PluginError naming the format and its function, and nothing is written."""
        rendered = call_plugin(self.name or "output format", self.render, *args, **kwargs)
        if rendered is None:
            raise PluginError(
                f"{self.name or 'output format'} ({defined_in(self.render)}) returned None, "
                "not the rendered output; its function must return the text to write."
            )
        return rendered


# Each kind's registry; its name is what error messages call a format of that kind.
REPORT_FORMATS: Registry[OutputFormat] = Registry("table format")
COMPARE_FORMATS: Registry[OutputFormat] = Registry("compare format")
PER_CORRUPTION_FORMATS: Registry[OutputFormat] = Registry("per-corruption format")
GATE_FORMATS: Registry[OutputFormat] = Registry("gate output format")
OUTPUT_FORMATS: dict[str, Registry[OutputFormat]] = {
    "report": REPORT_FORMATS,
    "compare": COMPARE_FORMATS,
    "per-corruption": PER_CORRUPTION_FORMATS,
    "gate": GATE_FORMATS,
}


def format_registry(kind: str) -> Registry[OutputFormat]:
    """The registry of `kind`'s formats ("report", "compare", "per-corruption", "gate")."""
    try:
        return OUTPUT_FORMATS[kind]
    except KeyError:
        raise ConfigError(did_you_mean(kind, list(OUTPUT_FORMATS), "output format kind")) from None


def register_format(
    kind: str, name: str, *suffixes: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the rendering function as `kind`'s format `name`, written to files
    with `suffixes` (".md"; none: stdout or the terminal only); the function itself is
    returned unchanged, for direct calls."""
    registry = format_registry(kind)

    def decorator(render: Callable[..., Any]) -> Callable[..., Any]:
        shown = f"{registry.what} {name!r}"
        registry.register(name)(OutputFormat(render, tuple(s.lower() for s in suffixes), shown))
        return render

    return decorator


def format_for_suffix(registry: Registry[OutputFormat], suffix: str) -> str | None:
    """The name of the format written to files ending in `suffix` (any case), if any."""
    return next((n for n in registry.names() if suffix.lower() in registry.get(n).suffixes), None)


def file_formats(registry: Registry[OutputFormat]) -> list[str]:
    """The names of the formats that can be written to a file, in registry order."""
    return [name for name in registry.names() if registry.get(name).suffixes]
