"""Options whose values are a registry's names, checked after plugins have registered theirs:
an `Enum` choice is fixed before `--import` has loaded anything, so `--import` is eager and
`--format` is checked against the registry when parsed (docs/architecture.md, output formats).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any

import typer

from robench._core.errors import RobenchError
from robench._core.plugins import FORMAT_ENTRY_POINT_GROUP
from robench._core.registry import Registry
from robench.cli._output import fail


def choices_metavar(registry: Registry[Any]) -> str:
    """`<csv|html|...>`: the registered names as the help shows a choice."""
    return "<" + "|".join(registry.names()) + ">"


def registry_choice(registry: Registry[Any], group: str) -> Callable[[str], str]:
    """A parser that takes a registered name; for another it first loads the entry points of
    `group` (not on every run: that reads every package's metadata), then refuses it."""

    def parse(value: str) -> str:
        if value not in registry:
            from robench._core.plugins import load_entry_points

            _load(lambda: load_entry_points((group,)))
        if value not in registry:
            names = registry.names()
            close = difflib.get_close_matches(value, names, n=3, cutoff=0.5)
            hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
            shown = ", ".join(map(repr, names))
            raise typer.BadParameter(f"{value!r} is not one of {shown}{hint}.")
        return value

    return parse


def import_plugins(groups: Iterable[str]) -> Callable[[list[str] | None], list[str] | None]:
    """The callback of an eager `--import`: load the entry points of `groups`, then each
    module or file given."""
    groups = tuple(groups)

    def load(imports: list[str] | None) -> list[str] | None:
        if imports:
            from robench._core.plugins import load_plugins

            _load(lambda: load_plugins(imports, groups))
        return imports

    return load


def plugin_imports() -> dict[str, Any]:
    """typer's keywords of a command's `--import`: eager, so the plugins load before the
    options that name what they register are parsed, wherever it stands on the line."""
    return {"is_eager": True, "callback": import_plugins((FORMAT_ENTRY_POINT_GROUP,))}


def registry_names(registry: Registry[Any]) -> dict[str, Any]:
    """typer's keywords of an option that takes a name of `registry`, a plugin's included."""
    return {
        "parser": registry_choice(registry, FORMAT_ENTRY_POINT_GROUP),
        "metavar": choices_metavar(registry),
    }


def _load(action: Callable[[], object]) -> None:
    """Run a plugin load; a bad plugin is one `error:` line (the command has not started, so
    its own error handler does not see it)."""
    try:
        action()
    except RobenchError as exc:
        raise fail(str(exc), exc.exit_code) from None
