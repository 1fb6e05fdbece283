"""Plugins: `--import MODULE_OR_FILE.py` and the entry-point groups (`PLUGIN_GROUPS`;
docs/extending.md). All import code that registers something through `robench.registry`;
they load before a suite is read, so a suite may use what they register. `robench.sources`
and `robench.executors` (sweep executors) are read without importing anything.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoints, entry_points
from pathlib import Path
from typing import Any, TypeVar

from robench._core.errors import ConfigError, PluginError, RobenchError, first_line
from robench._core.lazy import LazyEntry

logger = logging.getLogger(__name__)

T = TypeVar("T")

ENTRY_POINT_GROUP = "robench.models"
FORMAT_ENTRY_POINT_GROUP = "robench.formats"
SOURCE_ENTRY_POINT_GROUP = "robench.sources"
# The groups a suite may depend on, then output formats, then the models' group (the order
# they load in).
SUITE_GROUPS = ("robench.perturbations", "robench.metrics", "robench.tasks", "robench.datasets")
PLUGIN_GROUPS = (*SUITE_GROUPS, FORMAT_ENTRY_POINT_GROUP, ENTRY_POINT_GROUP)


def plugin_module_name(path: Path) -> str:
    """The name a plugin file is imported under: one per resolved path."""
    return "robench_user_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]


def import_user_module(target: str) -> None:
    """Import a module by dotted name, or a `.py` file by path, once per process: a file
    already imported from the same resolved path is not run again."""
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        if not path.is_file():
            raise ConfigError(f"--import {target}: no such file; pass a .py file or a module name.")
        name = plugin_module_name(path)
        if name in sys.modules:
            # Loaded already (a second evaluate() in this process): running it again would
            # register everything twice, which registries refuse. A module name is imported
            # once by importlib itself.
            return
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"--import {target}: cannot load it as a Python module.")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        # No __pycache__ beside the user's file: robench writes nothing next to its inputs.
        writes_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
        try:
            _run(lambda: spec.loader.exec_module(module), target)  # type: ignore[union-attr]
        except ConfigError:
            del sys.modules[name]  # a fixed file is imported again, not taken as loaded
            raise
        finally:
            sys.dont_write_bytecode = writes_bytecode
    else:
        _run(lambda: importlib.import_module(target), target)


def _run(action, target: str) -> None:  # type: ignore[no-untyped-def]
    try:
        action()
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"--import {target}: module {exc.name!r} not found; install it or pass a file path."
        ) from None
    except SystemExit as exc:  # would end robench with the plugin's exit code and no report
        raise ConfigError(
            f"--import {target} called sys.exit({exc.code!r}) while importing; a plugin must "
            "only register models, so remove the exit (or guard it with "
            '`if __name__ == "__main__":`).'
        ) from None
    except Exception as exc:
        raise ConfigError(f"--import {target} failed while importing: {exc!r}.") from exc


_SCANNED: dict[tuple[str, tuple[str, ...]], EntryPoints] = {}


def installed_entry_points(group: str) -> EntryPoints:
    """The installed entry points of `group`, scanned once per `sys.path`: the scan reads every
    distribution's metadata (about 40 ms per group here), which a training loop calling
    `robench.evaluate` every N steps would pay each time."""
    key = (group, tuple(sys.path))
    if key not in _SCANNED:
        _SCANNED[key] = entry_points(group=group)
    return _SCANNED[key]


def load_entry_points(groups: Iterable[str] = PLUGIN_GROUPS) -> list[str]:
    """Import every installed package registered under `groups` (all plugin groups)."""
    loaded = []
    for group in groups:
        for ep in installed_entry_points(group):
            try:
                ep.load()
            except (Exception, SystemExit) as exc:
                raise ConfigError(
                    f"entry point {ep.name!r} ({ep.value}) of group {group} failed to "
                    f"import: {exc!r}; fix or uninstall that package."
                ) from exc
            loaded.append(ep.name)
    return loaded


def declared_entry_points(group: str) -> list[LazyEntry]:
    """The entry points of `group` as lazy entries (name, "module:attribute"), imported by
    none: for a registry that imports each one when it is first used (model sources)."""
    return [LazyEntry(ep.name, ep.value) for ep in installed_entry_points(group)]


def load_plugins(imports: Iterable[str], groups: Iterable[str] = PLUGIN_GROUPS) -> None:
    """Load the entry points of `groups`, then each `--import` target, in order."""
    load_entry_points(groups)
    for target in imports:
        import_user_module(target)


def defined_in(function: Callable[..., Any]) -> str:
    """Where a registered function lives, for an error: `module.name (file)`; a plugin file
    loaded with --import is named by its path, not its internal module name."""
    module = getattr(function, "__module__", None) or "?"
    name = getattr(function, "__qualname__", None) or type(function).__name__
    try:
        path = inspect.getsourcefile(function)
    except TypeError:
        path = None
    if module.startswith("robench_user_") and path:
        return f"{name} in {path}"
    return f"{module}.{name}" + (f" ({path})" if path else "")


def call_plugin(
    what: str,
    function: Callable[..., T],
    *args: Any,
    shown: Callable[..., Any] | None = None,
    **kwargs: Any,
) -> T:
    """`function(*args, **kwargs)`, a registered extension (`what`: "metric 'top3'", "gate
    output format 'tsv'"); an exception inside it is one PluginError sentence naming it and
    where it is defined (`shown`'s definition when `function` only applies it), not robench's
    "unexpected" error. robench's own errors pass."""
    try:
        return function(*args, **kwargs)
    except RobenchError:
        raise
    except Exception as exc:
        raise PluginError(
            f"{what} ({defined_in(shown or function)}) raised {type(exc).__name__}: "
            f"{first_line(exc, 'no message')}; fix or remove that plugin."
        ) from exc
