"""Deprecated alias of `robench._core.plugins` (plugin and entry-point loading moved there,
beside the other extension points); kept for one version so that code importing the old
path keeps working."""

from __future__ import annotations

import warnings

from robench._core.plugins import *  # noqa: F403

warnings.warn(
    "robench.models.plugins moved to robench._core.plugins; the old path will be removed in "
    "the next version.",
    DeprecationWarning,
    stacklevel=2,
)
