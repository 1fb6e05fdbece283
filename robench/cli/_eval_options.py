"""`robench eval`'s flags, derived from the evaluation options' table
(robench/evaluation/options/__init__.py) as rows of robench/cli/_option_table.py: the command
function's typer signature, and the command line's text turned into Python values.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from robench._core.errors import ConfigError
from robench._core.lazy import import_object
from robench._core.registry import Registry
from robench._core.units import parse_pixel_value
from robench.cli._option_table import Opt
from robench.cli._parsing import dataset_map, float_list, input_size, json_object
from robench.cli._registry_options import plugin_imports, registry_names
from robench.evaluation.options import EVAL_OPTIONS
from robench.evaluation.options.eval_option import PANELS, EvalOption, ModelObject
from robench.evaluation.options.ranges import OPTION_RANGES, check_range

# The type typer parses, by form (robench.evaluation.options.CLI_FORMS); "value" and
# "choice" are read from the option itself.
_TEXT_TYPES: dict[str, Any] = {
    "switch": bool,
    "repeated": list[str],
    "data": list[str],
    "floats": str,
    "size": str,
    "json": str,
    "pixels": str,
    "count": str,
}


def _value_type(option: EvalOption) -> Any:
    """The one type typer parses a "value" option as: a path, a number or text."""
    union = typing.get_origin(option.type) in (types.UnionType, typing.Union)
    members = set(typing.get_args(option.type)) - {type(None)} if union else {option.type}
    members.discard(ModelObject)  # a model held in memory is Python's; the command line's is text
    if Path in members:
        return Path
    (single,) = members
    if typing.get_origin(single) is typing.Literal:
        return str  # checked by the library, which names the choices (--bad-images)
    return single


def _choice_type(option: EvalOption) -> type[enum.Enum]:
    """A str enum of the valid values: the keys of the table `option.choices` names."""
    names = list(import_object(option.choices or ""))
    title = option.name.title().replace("_", "")
    return enum.Enum(f"{title}Choice", {name: name for name in names}, type=str)  # type: ignore[return-value]


def _parsed_type(option: EvalOption) -> Any:
    if option.form == "value":
        return _value_type(option)
    if option.form == "choice":
        return _choice_type(option)
    return _TEXT_TYPES[option.form]


def _plugin_aware(option: EvalOption) -> dict[str, Any]:
    """An eager `--import`, and a choice among a registry's names (the report formats) that
    accepts what a plugin registered there."""
    if option.name == "imports":
        return plugin_imports()
    if option.form == "choice" and isinstance(import_object(option.choices or ""), Registry):
        return registry_names(import_object(option.choices or ""))
    return {}


def _row(option: EvalOption) -> Opt:
    extra = _plugin_aware(option)
    parsed = str if "parser" in extra else _parsed_type(option)
    # A repeated flag not given is None to typer; the table's default (()) applies after.
    default = None if option.form in ("repeated", "data") else option.default
    return Opt(option.name, parsed, default, option.help, option.short, option.flag,
               option.argument, option.metavar, option.panel, extra)  # fmt: skip


def eval_rows() -> list[Opt]:
    """`robench eval`'s options as rows: the argument, then the options panel by panel."""
    options = sorted(EVAL_OPTIONS.values(), key=lambda o: (not o.argument, PANELS.index(o.panel)))
    return [_row(option) for option in options]


def _checked(option: EvalOption, parsed: Any, text: str) -> Any:
    """`parsed` (a number or each of a list's) within the flag's range, if it has one."""
    flag = option.flags[0]
    if flag in OPTION_RANGES:
        check_range(flag, parsed, text)
    return parsed


def _whole(option: EvalOption, text: str) -> int:
    """A count's text as a number; anything else is one ConfigError naming the flag."""
    try:
        return int(text)
    except ValueError:
        flag = option.flags[0]
        raise ConfigError(
            f"{flag} {text!r} is neither auto nor a whole number; pass one, e.g. {flag} auto."
        ) from None


# Form -> the command line's text as the Python value (None: not given).
_PARSERS: dict[str, Callable[[EvalOption, Any], Any]] = {
    "value": lambda option, value: value,
    "switch": lambda option, value: value,
    "choice": lambda option, value: getattr(value, "value", value),  # an enum, or a name
    "repeated": lambda option, values: tuple(values),
    "data": lambda option, values: dataset_map(values),
    "floats": lambda o, text: _checked(o, float_list(text, o.flags[0]), text),
    "size": lambda o, text: _checked(o, input_size(text), text),
    "pixels": lambda o, text: _checked(o, parse_pixel_value(text, o.flags[0]), text),
    "json": lambda o, text: json_object(text, o.flags[0]),
    "count": lambda o, text: text if text == "auto" else _checked(o, _whole(o, text), text),
}


def python_values(given: Mapping[str, Any]) -> dict[str, Any]:
    """The options given on the command line as `request_from_options` keywords, in the
    table's order (one not given is left out: its default applies)."""
    return {
        name: _PARSERS[option.form](option, given[name])
        for name, option in EVAL_OPTIONS.items()
        if given.get(name) is not None
    }
