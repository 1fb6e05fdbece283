"""Test helper: makes the modules named in ROBENCH_TEST_HIDDEN_MODULES (comma-separated)
unimportable, as in an install without their optional extra (tests/test_extras.py puts this
folder first on PYTHONPATH, so Python imports it at start-up)."""

from __future__ import annotations

import os
import sys
from importlib.machinery import ModuleSpec
from typing import Any

HIDDEN = {name for name in os.environ.get("ROBENCH_TEST_HIDDEN_MODULES", "").split(",") if name}


class _HideModules:
    """A meta-path finder that refuses the hidden modules and their submodules."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if HIDDEN:
    sys.meta_path.insert(0, _HideModules())
