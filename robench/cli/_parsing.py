"""Parsers for command-line values: comma-separated lists (`--mean 0.5,0.5,0.5`), named
datasets (`--data imagenet-r=/data/imagenet-r`)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from robench._core.errors import ConfigError
from robench.results.report.schema import DEFAULT_DATASET


def float_list(text: str | None, option: str) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        values = ()
    if not values or not all(math.isfinite(v) for v in values):
        raise ConfigError(
            f"{option} {text!r} is not a comma-separated list of finite numbers; e.g. "
            "0.485,0.456,0.406."
        )
    return values


def input_size(text: str | None) -> tuple[int, int, int] | None:
    if text is None:
        return None
    parts = text.split(",")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or min(values) < 1:
        raise ConfigError(
            f"--input-size {text!r} must be C,H,W with positive integers, e.g. 3,224,224."
        )
    return values  # type: ignore[return-value]


def json_object(text: str | None, option: str) -> dict[str, Any]:
    """A JSON object flag (`--model-kwargs '{"delta": 1.0}'`); {} when not given."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{option} is not valid JSON ({exc}); e.g. '{{\"delta\": 1.0}}'."
        ) from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option} must be a JSON object, e.g. '{{\"delta\": 1.0}}'.")
    return value


_DATASET_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")


def dataset_map(values: list[str]) -> str | dict[str, str]:
    """`--data PATH` -> PATH; repeated `--data NAME=PATH` -> {NAME: PATH} in order. An
    existing path is a path even if it holds "="; an unnamed value is named "default"."""
    named: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or Path(value).exists() or not _DATASET_NAME.fullmatch(name):
            name, path = DEFAULT_DATASET, value
        if name in named:
            raise ConfigError(
                f"--data names dataset {name!r} twice; give each dataset once, as NAME=PATH "
                "(an unnamed --data is the dataset called 'default')."
            )
        named[name] = path
    if list(named) == [DEFAULT_DATASET]:
        return named[DEFAULT_DATASET]
    return named
