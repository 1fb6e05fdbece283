"""Common corruptions (ImageNet-C, Hendrycks & Dietterich 2019), computed on the fly.

Names, groups and severities follow the `imagecorruptions` package (the 15 standard
corruptions in ImageNet-C order, the 4 extra ones, severities 1..5). `corrupt_image(image,
name, severity, seed)` gives the same output for the same arguments in every process, worker
and call order, from either implementation: `reference` (the library) or `fast` (the default,
reimplementing the slow ones). Importing this package loads nothing heavy (not even numpy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robench._core.corruption_names import ALL, EXTRA, GROUPS, SEVERITIES, STANDARD

if TYPE_CHECKING:
    import numpy as np

IMPLEMENTATIONS: tuple[str, ...] = ("fast", "reference")


def corrupt_image(
    image: np.ndarray, name: str, severity: int, seed: int, implementation: str = "fast"
) -> np.ndarray:
    """`apply.corrupt_image`, imported on first use so that suites validate without numpy."""
    from robench.perturbations.corruptions.apply import corrupt_image as corrupt

    return corrupt(image, name, severity, seed, implementation)


__all__ = [
    "ALL",
    "EXTRA",
    "GROUPS",
    "IMPLEMENTATIONS",
    "SEVERITIES",
    "STANDARD",
    "corrupt_image",
]
