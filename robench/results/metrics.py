"""Deprecated alias of `robench.results.stats.metrics` (the metric registry moved there);
kept for one version so that plugins importing the old path keep working."""

from __future__ import annotations

import warnings

from robench.results.stats.metrics import *  # noqa: F403
from robench.results.stats.metrics import METRICS, Metric, register  # noqa: F401

warnings.warn(
    "robench.results.metrics moved to robench.results.stats.metrics (or use "
    "robench.registry.register_metric); the old path will be removed in the next version.",
    DeprecationWarning,
    stacklevel=2,
)
