"""Where the data files shipped with robench live (suites in `attacks/`, model cards in `models/`).

In a wheel they sit inside the package (`robench/_bundled/<name>`); in a source checkout or an
editable install they are the repository's top-level folders.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # robench/


def bundled_dir(name: str) -> Path:
    """The folder of shipped files called `name` ("attacks" or "models")."""
    inside = _PACKAGE_DIR / "_bundled" / name
    if inside.is_dir():
        return inside
    return _PACKAGE_DIR.parent / name
