"""The Python API is as strict as the command line: every keyword of `robench.evaluate` is
checked against the option table's types and ranges (robench/evaluation/options), a wrong one
one `InputError` sentence. From Python the values arrive unparsed: `limit="abc"` once failed
deep inside the sampler with a TypeError, `seed=2**70` inside numpy with an OverflowError.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import torch
from torch import nn

from robench._core.errors import ConfigError
from robench.evaluation.options import EVAL_OPTIONS
from robench.evaluation.options.eval_option import ModelObject
from robench.evaluation.options.ranges import OPTION_RANGES, check_range, flag_of

# evaluate's own keywords of a simple type (the others are checked where they are used).
OWN_TYPES: dict[str, Any] = {
    "task": str | None,
    "model_name": str | None,
    "surrogate_name": str | None,
    "progress": bool,
}
# A simple option type -> how it reads in a sentence, and whether a value is of it.
_SIMPLE_TYPES: dict[Any, tuple[str, Callable[[Any], bool]]] = {
    bool: ("True or False", lambda v: isinstance(v, bool)),
    int: ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    float: ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    str: ("a string", lambda v: isinstance(v, str)),
    Path: ("a path", lambda v: isinstance(v, os.PathLike)),
    ModelObject: ("an nn.Module", lambda v: isinstance(v, nn.Module)),
    type(None): ("None", lambda v: v is None),
    Any: ("anything", lambda v: True),
}


def _matches(value: Any, hint: Any) -> bool:
    """Whether `value` is of the option type `hint` (the table's annotations only)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_matches(value, arg) for arg in args)
    if origin is Literal:
        return value in args
    if origin in (Sequence, list, tuple):
        items = not isinstance(value, str | bytes) and isinstance(value, Sequence)
        return items and all(_matches(item, args[0]) for item in value) if args else items
    if origin is Mapping:
        return isinstance(value, Mapping)
    return _SIMPLE_TYPES[hint][1](value) if hint in _SIMPLE_TYPES else True


def describe(hint: Any) -> str:
    """`int | None` -> "an integer or None"."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(describe(arg) for arg in args)
    if origin is Literal:
        return "one of " + ", ".join(repr(arg) for arg in args)
    if origin in (Sequence, list, tuple):
        return f"a list of {describe(args[0]).removeprefix('a ').removeprefix('an ')}s"
    if origin is Mapping:
        return "a dict"
    return _SIMPLE_TYPES[hint][0] if hint in _SIMPLE_TYPES else getattr(hint, "__name__", str(hint))


def _refuse_type(name: str, value: Any, hint: Any) -> None:
    if not _matches(value, hint):
        shown = repr(value) if len(repr(value)) <= 40 else type(value).__name__
        raise ConfigError(
            f"{name}={shown} ({type(value).__name__}) is not what {name} takes: {describe(hint)}; "
            f"pass a value of that type (`robench eval --help` describes {flag_of(name)})."
        )


def check_keyword_values(options: Mapping[str, Any], own: Mapping[str, Any]) -> None:
    """Refuse an option keyword (or one of evaluate's own, `own`) whose value is not of its
    type or, for a number, outside its range; None means "not given"."""
    for name, value in own.items():
        if value is not None and name in OWN_TYPES:
            _refuse_type(name, value, OWN_TYPES[name])
    for name, value in options.items():
        option = EVAL_OPTIONS.get(name)
        if option is None or value is None:
            continue
        _refuse_type(name, value, option.type)
        flag = flag_of(name)
        numbers = [value] if isinstance(value, int | float) else value
        if flag in OPTION_RANGES and not isinstance(value, bool | str):
            check_range(flag, numbers, shown=f"({name}={value!r})")


# preprocessing= keys -> the flag whose range they share.
_PREPROCESSING_RANGES = {"mean": "--mean", "std": "--std", "size": "--input-size"}


def check_preprocessing(preprocessing: Any, keyword: str = "preprocessing") -> None:
    """The numbers of a `preprocessing=` dict against the ranges of --mean, --std and
    --input-size (a std of 0 once read as a pydantic "1 validation error")."""
    if not isinstance(preprocessing, Mapping):
        return
    for key, flag in _PREPROCESSING_RANGES.items():
        value = preprocessing.get(key)
        if value is None:
            continue
        items = [value] if isinstance(value, int | float) else value
        if not _matches(items, Sequence[float]):
            raise ConfigError(
                f"{keyword}['{key}'] = {value!r:.60} is not a list of numbers; pass e.g. "
                f"{keyword}=dict({key}=({OPTION_RANGES[flag].example.replace(',', ', ')}))."
            )
        check_range(flag, items, shown=f"({keyword}['{key}'] = {value!r})")


def check_device_name(device: Any) -> None:
    """`device=` must name a device torch knows ("banana" failed inside torch); whether it
    is there, and whether the model is on it, is checked where the model is wrapped."""
    if not isinstance(device, str):
        return  # None, or a type the option table refuses
    try:
        torch.device(device)
    except RuntimeError:
        raise ConfigError(f"device={device!r} is not a device; use cpu, cuda or cuda:N.") from None
