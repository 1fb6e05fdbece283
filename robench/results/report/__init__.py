"""The report core: the report's schema and older versions, the always-on result checks,
attack display names, output formats, and reports as tidy rows, frames and HTML.

May import: `robench._core` only; every other room of `results/` builds on this one.

`from robench.results.report import Report` (the module this room replaced) still works for
one version, with a DeprecationWarning; import from `robench.results.report.schema`.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    # PEP 562: names of the old flat module `robench/results/report.py`, kept for plugins.
    # A submodule not yet imported (`tidy`) is no name of schema.py: AttributeError, then
    # the import system loads it.
    schema = importlib.import_module("robench.results.report.schema")
    if name.startswith("__") or not hasattr(schema, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"robench.results.report.{name} moved to robench.results.report.schema.{name}; the "
        "old path will be removed in the next version.",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(schema, name)
