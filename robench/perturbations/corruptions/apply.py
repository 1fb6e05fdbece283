"""`corrupt_image`: one checked entry point to both implementations, for RGB and grey images.

The library's corruptions are written for RGB. A grey image is replicated to three channels,
corrupted, and turned back into one channel with ITU-R 601-2 luma computed exactly as PIL's
`Image.convert("L")` does (fixed point, weights 19595, 38470 and 7471 over 2**16, rounded
half up), so a grey result is what a PIL-based pipeline would store.
"""

from __future__ import annotations

import importlib

import numpy as np

from robench._core.corruption_names import ALL, SEVERITIES
from robench._core.errors import RobenchError
from robench._core.registry import did_you_mean

# Implementation name -> (module, function); imported on first use, since both pull in the
# library's stack (OpenCV, scikit-image, SciPy, numba).
_IMPLEMENTATIONS: dict[str, tuple[str, str]] = {
    "fast": ("robench.perturbations.corruptions.fast", "corrupt_fast"),
    "reference": ("robench.perturbations.corruptions.reference", "corrupt_reference"),
}
# PIL's ITU-R 601-2 luma in 16-bit fixed point (Convert.c, L24), plus one half for rounding.
_LUMA_WEIGHTS = (19595, 38470, 7471)
_LUMA_HALF = 1 << 15
_MAX_SEED = 2**32 - 1  # numpy's legacy RNG and numba take 32-bit seeds


class CorruptionInputError(RobenchError, ValueError):
    """A corruption name, severity, seed, implementation or image that cannot be used."""


def _check_choice(value: object, choices: tuple[str, ...], what: str) -> None:
    if value not in choices:
        raise CorruptionInputError(did_you_mean(str(value), list(choices), what))


def _check_arguments(image: np.ndarray, severity: int, seed: int) -> None:
    if isinstance(severity, bool) or severity not in SEVERITIES:
        raise CorruptionInputError(
            f"severity must be an integer in 1..5, got {severity!r}; pass one of {SEVERITIES}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise CorruptionInputError(f"seed must be an integer, got {seed!r}")
    if not 0 <= seed <= _MAX_SEED:
        raise CorruptionInputError(f"seed must be in 0..2**32 - 1, got {seed}")
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8:
        got = image.dtype if isinstance(image, np.ndarray) else type(image).__name__
        raise CorruptionInputError(
            f"image must be a uint8 numpy array, got {got}; convert with (x * 255).round()"
            ".astype(np.uint8) from [0, 1] floats"
        )
    grey = image.ndim == 2 or (image.ndim == 3 and image.shape[2] == 1)
    if not (grey or (image.ndim == 3 and image.shape[2] == 3)):
        raise CorruptionInputError(
            f"image must have shape (H, W), (H, W, 1) or (H, W, 3), got {image.shape}"
        )


def luma(rgb: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 -> (H, W) uint8, bit-identical to PIL's `convert("L")`."""
    wide = rgb.astype(np.uint32)
    r, g, b = _LUMA_WEIGHTS
    total = wide[..., 0] * r + wide[..., 1] * g + wide[..., 2] * b + _LUMA_HALF
    return (total >> 16).astype(np.uint8)


def corrupt_image(
    image: np.ndarray, name: str, severity: int, seed: int, implementation: str = "fast"
) -> np.ndarray:
    """`image` (uint8, (H, W), (H, W, 1) or (H, W, 3)) corrupted by `name` at `severity`
    (1..5), same shape and dtype; `seed` (0..2**32 - 1) fixes every random draw, and numpy's
    global RNG is left as it was."""
    _check_choice(name, ALL, "corruption")
    _check_choice(implementation, tuple(_IMPLEMENTATIONS), "corruption implementation")
    _check_arguments(image, severity, seed)
    module, function = _IMPLEMENTATIONS[implementation]
    corrupt = getattr(importlib.import_module(module), function)
    if image.ndim == 3 and image.shape[2] == 3:
        return corrupt(np.ascontiguousarray(image), name, int(severity), int(seed))
    rgb = np.repeat(image.reshape(image.shape[0], image.shape[1], 1), 3, axis=2)
    return luma(corrupt(rgb, name, int(severity), int(seed))).reshape(image.shape)
