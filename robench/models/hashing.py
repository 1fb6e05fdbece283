"""The sha256 of a file, read in chunks; hashlib only, so model cards check without torch."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in chunks (`hashlib.file_digest`)."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
