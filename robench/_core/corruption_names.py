"""The ImageNet-C corruption names (Hendrycks & Dietterich, ICLR 2019), in the benchmark's
order, with their groups: one list for the corruption kind, the pre-rendered readers, the
aggregates and the figures. No imports, so every layer may use it."""

from __future__ import annotations

# The 15 corruptions of ImageNet-C by group, in the benchmark's order.
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
# Group of every corruption; the 4 held-out ones form the group "extra".
GROUP_OF: dict[str, str] = {
    **{name: group for group, names in GROUPS.items() for name in names},
    **{name: "extra" for name in EXTRA},
}
