"""The reference corruptions: `imagecorruptions` itself, seeded by robench.

For images of at least 32 x 32 pixels, the library's minimum, `corrupt_reference` equals
`np.random.seed(seed); imagecorruptions.corrupt(...)` (`glass_blur` and `impulse_noise` also
get `seed`), and restores the caller's RNG state. Threads share that state, so corrupt from
one thread per process (DataLoader workers are processes).

Smaller images (Fashion-MNIST is 28 x 28) bypass `corrupt`'s size check; all 19 corruptions
keep the shape and 18 behave as at 32 px. `motion_blur` stops adding taps once a shift
reaches the image side, so the image darkens (a flat grey 200 comes back as 188 at 28 px,
severity 5): such images are edge-padded (bottom and right) and cropped back, which keeps
every tap of the library's formula, since its shifts replicate edge pixels. (The library
drops taps for severity 5 on images of 32 to 40 px too; those are left to it, unchanged.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

# The library refuses images with a side below this (`imagecorruptions.corrupt`).
LIBRARY_MIN_SIDE = 32
# Corruptions that take the seed as an argument; the others draw from numpy's global RNG.
SEEDED_BY_ARGUMENT = frozenset({"glass_blur", "impulse_noise"})
# Side to edge-pad images smaller than LIBRARY_MIN_SIDE to: motion_blur's longest kernel
# (severity 5, radius 20) has 41 taps, shifts of 0..40 pixels, so 41 keeps every tap.
_SMALL_IMAGE_PADDING: dict[str, int] = {"motion_blur": 41}

Corruption = Callable[[np.ndarray, str, int, int], np.ndarray]


@contextmanager
def seeded_global_rng(seed: int) -> Iterator[None]:
    """Seed numpy's global RNG for the block, then put the caller's state back."""
    state = np.random.get_state()
    try:
        np.random.seed(seed)
        yield
    finally:
        np.random.set_state(state)


def with_small_image_padding(
    corrupt: Corruption, image: np.ndarray, name: str, severity: int, seed: int
) -> np.ndarray:
    """Run `corrupt`, edge-padding images too small for `name` and cropping the result back."""
    height, width = image.shape[:2]
    side = _SMALL_IMAGE_PADDING.get(name)
    if side is None or min(height, width) >= LIBRARY_MIN_SIDE:
        return corrupt(image, name, severity, seed)
    pad = ((0, max(side - height, 0)), (0, max(side - width, 0)), (0, 0))
    padded = np.pad(image, pad, mode="edge")
    return np.ascontiguousarray(corrupt(padded, name, severity, seed)[:height, :width])


def _call_library(image: np.ndarray, name: str, severity: int, seed: int) -> np.ndarray:
    from imagecorruptions import corruption_dict
    from PIL import Image

    kwargs = {"seed": seed} if name in SEEDED_BY_ARGUMENT else {}
    with seeded_global_rng(seed):
        result = corruption_dict[name](Image.fromarray(image), severity, **kwargs)
    # np.uint8 of a PIL image (pixelate, jpeg_compression) is a read-only view, and
    # defocus_blur's is a transposed one: hand back a writable, contiguous array.
    return np.require(np.uint8(result), requirements=("C", "W", "O"))


def corrupt_reference(image: np.ndarray, name: str, severity: int, seed: int) -> np.ndarray:
    """`image` (uint8, (H, W, 3)) corrupted by the library's `name` at `severity`."""
    return with_small_image_padding(_call_library, image, name, severity, seed)
