"""Reading declarative TOML files (suites, model cards, policies) into pydantic models.

Validation errors become one `ConfigError` sentence naming the file, the field and the fix.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from robench._core.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

M = TypeVar("M", bound=BaseModel)


def describe_validation_error(exc: ValidationError) -> str:
    """The first problem of a pydantic error as `field.path: message`."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")
    more = len(exc.errors()) - 1
    extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{where}: {message}{extra}"


def read_toml_model(
    path: Path, model: type[M], what: str, doc: str = "docs/formats.md"
) -> tuple[M, str]:
    """Parse and validate `path`; return the model and the file's sha256. `doc` is where the
    format is documented, named in the error."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} file {path}: {exc.strerror}.") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{what} file {path} is not valid TOML ({exc}); fix the syntax."
        ) from None
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            f"{what} file {path} is invalid: {describe_validation_error(exc)}; "
            f"see {doc} for the {what} format."
        ) from None
    return parsed, hashlib.sha256(raw).hexdigest()
