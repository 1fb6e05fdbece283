"""A saved model's folder and its config.json, checked before any library reads it.

timm (`save_for_hf`) and transformers (`save_pretrained`) both write `config.json`; each
library's config has a key the other's lacks, which tells a folder given to the wrong source
from one that is not a model at all, so the error can name the prefix that loads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from robench._core.errors import ConfigError


class Library(NamedTuple):
    key: str  # what every config.json of the library has
    prefix: str  # the model source that loads its folders
    saved_by: str  # how such a folder is written


LIBRARIES = {
    "timm": Library("architecture", "local-dir:", "timm's save_for_hf"),
    "transformers": Library("model_type", "hf:", "transformers' save_pretrained"),
}


def read_model_config(folder: Path, library: str) -> tuple[Path, dict[str, Any]]:
    """(config.json's path, its content) of a `library` model folder; ConfigError otherwise."""
    wanted = LIBRARIES[library]
    if not folder.is_dir():
        state = "is a file" if folder.exists() else "does not exist"
        raise ConfigError(
            f"model folder {folder} {state}; pass a folder written by {wanted.saved_by}."
        )
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ConfigError(
            f"{folder} is not a model folder (it has no config.json); pass a folder written by "
            f"{wanted.saved_by} ({wanted.prefix}PATH), or by "
            + " or ".join(f"{lib.saved_by} ({lib.prefix}PATH)" for lib in _others(library))
            + "."
        )
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{config_file} is not valid JSON ({exc}); save the model again."
        ) from None
    if isinstance(config, dict) and wanted.key in config:
        return config_file, config
    other = next(
        (lib for lib in _others(library) if isinstance(config, dict) and lib.key in config), None
    )
    fix = (
        f"it was written by {other.saved_by}: load it with {other.prefix}{folder}."
        if other is not None
        else f"pass a folder written by {wanted.saved_by}."
    )
    raise ConfigError(f"{config_file} has no {wanted.key}, so it is not a {library} config; {fix}")


def _others(library: str) -> list[Library]:
    return [lib for name, lib in LIBRARIES.items() if name != library]
