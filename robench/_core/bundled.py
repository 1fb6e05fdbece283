"""Where the data files shipped with robench live (suites in `attacks/`, model cards in `models/`).

In a wheel they sit inside the package (`robench/_bundled/<name>`); in a source checkout or an
editable install they are the repository's top-level folders.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from robench._core.errors import RobenchError
from robench._core.registry import did_you_mean

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # robench/


def bundled_dir(name: str) -> Path:
    """The folder of shipped files called `name` ("attacks" or "models")."""
    inside = _PACKAGE_DIR / "_bundled" / name
    if inside.is_dir():
        return inside
    return _PACKAGE_DIR.parent / name


def shipped_or_file(
    spec: str | os.PathLike[str],
    shipped: Mapping[str, Path],
    what: str,
    holds: str,
    error: type[RobenchError],
) -> Path:
    """The shipped file named `spec`, or the file at path `spec`; else `error` saying what a
    `what` file `holds` ("one ImageNet wnid per line")."""
    if str(spec) in shipped:
        return shipped[str(spec)]
    path = Path(spec)
    if path.is_file():
        return path
    if path.exists() or path.suffix or len(path.parts) > 1:
        raise error(
            f"{what} file {path} does not exist or is not a file; pass a text file with "
            f"{holds}, or a shipped {what} ({', '.join(shipped)})."
        )
    raise error(
        did_you_mean(str(spec), list(shipped), what)[:-1]
        + f" (or pass a path to a text file with {holds})."
    )
