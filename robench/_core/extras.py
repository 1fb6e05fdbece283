"""Optional extras: which `pip install 'robench[EXTRA]'` brings which module, and the check that
refuses a run needing a missing one before it does any work (one sentence and exit 2, not a
ModuleNotFoundError minutes in). tests/test_extras.py keeps `MODULE_EXTRAS` and pyproject.toml's
`[project.optional-dependencies]` in agreement.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping

from robench._core.errors import ConfigError

# Importable module -> the extra that installs it.
MODULE_EXTRAS = {
    "transformers": "hf",
    "nltk": "text",
    "pyarrow": "text",
    "submitit": "slurm",
    "segmentation_models_pytorch": "smp",
}


class MissingExtraError(ConfigError):
    """A run needs a module of an optional extra that is not installed."""

    def __init__(self, module: str, needed_for: str) -> None:
        self.module = module
        self.extra = MODULE_EXTRAS[module]
        self.needed_for = needed_for
        super().__init__(
            f"{needed_for} needs {module}, which is not installed; add it with "
            f"`{install_command(self.extra)}` and run again."
        )


def install_command(extra: str) -> str:
    return f"pip install 'robench[{extra}]'"


def is_installed(module: str) -> bool:
    """Whether `import module` would find it, without importing it (a module set to None in
    `sys.modules`, or refused by an import hook, counts as missing)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_extra(needs: Mapping[str, str]) -> MissingExtraError | None:
    """The error for the first module of `needs` (module -> what needs it) that is missing."""
    for module, needed_for in needs.items():
        if not is_installed(module):
            return MissingExtraError(module, needed_for)
    return None


def require(module: str, needed_for: str) -> None:
    """Raise `MissingExtraError` unless `module` is installed."""
    error = missing_extra({module: needed_for})
    if error is not None:
        raise error
