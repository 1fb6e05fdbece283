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

# The 15 corruptions of ImageNet-C, in the benchmark's order, by group.
GROUPS: dict[str, tuple[str, ...]] = {
    "noise": ("gaussian_noise", "shot_noise", "impulse_noise"),
    "blur": ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur"),
    "weather": ("snow", "frost", "fog", "brightness"),
    "digital": ("contrast", "elastic_transform", "pixelate", "jpeg_compression"),
}
STANDARD: tuple[str, ...] = tuple(name for names in GROUPS.values() for name in names)
# Held-out corruptions of the ImageNet-C paper (its "validation" set), in library order.
EXTRA: tuple[str, ...] = ("speckle_noise", "gaussian_blur", "spatter", "saturate")
ALL: tuple[str, ...] = STANDARD + EXTRA
SEVERITIES: tuple[int, ...] = (1, 2, 3, 4, 5)
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
