"""Files robench writes get the user's usual permissions (0666 less the umask).

Atomic writes go through a temporary file, and temporary files are created private (0600):
without this, a report or checkpoint could not be shared as a CI artifact or with a group.
"""

from __future__ import annotations

import os
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def give_default_mode(target: int | str | Path) -> None:
    """chmod an open file descriptor or a path to 0666 & ~umask."""
    mode = 0o666 & ~_umask()
    if isinstance(target, int):
        os.fchmod(target, mode)
    else:
        os.chmod(target, mode)
