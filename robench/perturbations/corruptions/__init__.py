"""Common corruptions (ImageNet-C, Hendrycks & Dietterich 2019), computed on the fly.

Names, groups and severities follow the `imagecorruptions` package: the 15 standard
corruptions in ImageNet-C order, the 4 extra ("validation") ones, severities 1..5. Each image
is corrupted by `corrupt_image(image, name, severity, seed)`, which gives the same output for
the same arguments in every process, in every DataLoader worker and in any call order.

Two implementations give the same pixels (`fast.py` documents the one exception, at most one
grey level): `reference` calls the library itself, `fast` (the default) reimplements the slow
corruptions. Importing this package loads numpy only; the library and its stack (OpenCV,
scikit-image, SciPy, numba) load on the first corrupted image.
"""

from __future__ import annotations

from robench._core.corruption_names import ALL, EXTRA, GROUPS, SEVERITIES, STANDARD

IMPLEMENTATIONS: tuple[str, ...] = ("fast", "reference")

# Imported after the constants, which `apply` reads from this package.
from robench.perturbations.corruptions.apply import corrupt_image as corrupt_image  # noqa: E402

__all__ = [
    "ALL",
    "EXTRA",
    "GROUPS",
    "IMPLEMENTATIONS",
    "SEVERITIES",
    "STANDARD",
    "corrupt_image",
]
