"""Reading declarative TOML files (suites, model cards, policies) into pydantic models, and
writing TOML data back (`robench validate --resolved`).

Validation errors become one `ConfigError` sentence naming the file, the field and the fix.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from robench._core.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

M = TypeVar("M", bound=BaseModel)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def describe_validation_error(exc: ValidationError) -> str:
    """The first problem of a pydantic error as `field.path: message`."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")
    more = len(exc.errors()) - 1
    extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{where}: {message}{extra}"


def read_toml(path: Path, what: str) -> tuple[dict[str, Any], bytes]:
    """Parse `path`; return its data and its bytes."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} file {path}: {exc.strerror}.") from None
    try:
        return tomllib.loads(raw.decode("utf-8")), raw
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{what} file {path} is not valid TOML ({exc}); fix the syntax."
        ) from None


def validate_toml_model(
    data: dict[str, Any], model: type[M], what: str, source: str, doc: str = "docs/formats.md"
) -> M:
    """`data` as `model`, else a ConfigError naming `source` ("suite file x.toml") and `doc`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            f"{source} is invalid: {describe_validation_error(exc)}; "
            f"see {doc} for the {what} format."
        ) from None


def read_toml_model(
    path: Path, model: type[M], what: str, doc: str = "docs/formats.md"
) -> tuple[M, str]:
    """Parse and validate `path`; return the model and the file's sha256."""
    data, raw = read_toml(path, what)
    parsed = validate_toml_model(data, model, what, f"{what} file {path}", doc)
    return parsed, hashlib.sha256(raw).hexdigest()


def dump_toml(data: Mapping[str, Any]) -> str:
    """`data` (as `tomllib` reads it) written back as TOML: a table's plain keys first, then
    its tables, then its arrays of tables; comments are not kept."""
    lines: list[str] = []
    _dump_table(data, (), lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _dump_table(data: Mapping[str, Any], prefix: tuple[str, ...], lines: list[str]) -> None:
    nested = {k: v for k, v in data.items() if isinstance(v, dict) or _is_table_array(v)}
    lines += [f"{_key(k)} = {_value(v)}" for k, v in data.items() if k not in nested]
    for key, value in sorted(nested.items(), key=lambda kv: _is_table_array(kv[1])):
        header = ".".join(_key(part) for part in (*prefix, key))
        for table in value if isinstance(value, list) else [value]:
            lines += ["", f"[[{header}]]" if isinstance(value, list) else f"[{header}]"]
            _dump_table(table, (*prefix, key), lines)


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    return value.isoformat()  # a TOML date, time or date-time, as tomllib returns them
