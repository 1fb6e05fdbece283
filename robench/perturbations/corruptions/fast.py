"""Fast corruptions: the library's slow ones, reimplemented to give the same pixels.

Each reimplementation draws from numpy's global RNG in the library's order and amounts, and
repeats its floating-point operations in the same order and precision, so outputs are
bit-identical (`tests/test_corruption_functions.py`). Corruptions not in `_FAST` are already
quick in the library (under 10 ms at 224 x 224).

What is faster, and why it is still exact:
- zoom_blur: one numba pass over all zoom factors, with per-axis indices and weights of
  scipy's `zoom(order=1)` precomputed once per (size, factor), summed in float32 as the
  library does. motion_blur, and snow's layer: one kernel, the same taps in the same order.
- glass_blur: the library's numba shuffle is compiled in every process (2.2 s, and again for
  severity 3); `_kernels.glass_shuffle` draws the same numba RNG numbers and is cached on
  disk. Both Gaussian blurs call SciPy with the arguments skimage's `gaussian` passes.
- brightness, saturate: skimage's `rgb2hsv`/`hsv2rgb` round trip, per pixel in float64.
- elastic_transform: scipy's `map_coordinates(order=1, mode='reflect')`, per pixel.
- frost: the frost photographs are read and resized once per (photograph, image size).
"""

from __future__ import annotations

import functools
import importlib.resources
import math
from collections.abc import Callable

import numpy as np
from imagecorruptions import corruptions as lib
from scipy import ndimage

from robench.perturbations.corruptions import _kernels
from robench.perturbations.corruptions.reference import (
    corrupt_reference,
    seeded_global_rng,
    with_small_image_padding,
)

Tables = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

# Severity parameters, copied from imagecorruptions 1.1.5 (index severity - 1).
_ZOOM_FACTORS = (
    np.arange(1, 1.11, 0.01),
    np.arange(1, 1.16, 0.01),
    np.arange(1, 1.21, 0.02),
    np.arange(1, 1.26, 0.02),
    np.arange(1, 1.31, 0.03),
)
_GLASS = ((0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2))  # sigma, delta, iters
_MOTION = ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15))  # radius, sigma
_SNOW = (
    (0.1, 0.3, 3, 0.5, 10, 4, 0.8),
    (0.2, 0.3, 2, 0.5, 12, 4, 0.7),
    (0.55, 0.3, 4, 0.9, 12, 8, 0.7),
    (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
    (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55),
)
_FROST = ((1, 0.4), (0.8, 0.6), (0.7, 0.7), (0.65, 0.7), (0.6, 0.75))
_FROST_FILES = ("frost1.png", "frost2.png", "frost3.png", "frost4.jpg", "frost5.jpg", "frost6.jpg")
_BRIGHTNESS = (0.1, 0.2, 0.3, 0.4, 0.5)
_SATURATE: tuple[tuple[float, float], ...] = ((0.3, 0), (0.1, 0), (2, 0), (5, 0.1), (20, 0.2))
_ELASTIC_ALPHA = (250 * 0.05, 250 * 0.065, 250 * 0.085, 250 * 0.1, 250 * 0.12)


@functools.lru_cache(maxsize=256)
def _zoom_axis(length: int, zoom_factor: float) -> Tables:
    """Per output index < `length`: the two source indices, weights and in-range flag of
    scipy's order-1 `zoom` of the centred crop `clipped_zoom` takes (ni_interpolation.c:
    output o reads input o * (in - 1) / (out - 1), weights 1 - t and t, cval 0 outside)."""
    crop = int(np.ceil(length / float(zoom_factor)))
    top = (length - crop) // 2
    out_len = round(crop * zoom_factor)
    scale = (crop - 1) / (out_len - 1) if out_len > 1 else 1.0
    i0, i1 = np.zeros(length, np.int64), np.zeros(length, np.int64)
    w0, w1 = np.zeros(length), np.zeros(length)
    inside = np.zeros(length, np.bool_)
    for o in range(length):
        cc = float(o) * scale
        if cc > crop - 1:  # mode 'constant': scipy writes cval (0) here
            continue
        start = math.floor(cc)
        w0[o] = 1.0 - (cc - start)
        w1[o] = 1.0 - w0[o]
        i0[o] = top + start
        i1[o] = top + int(_kernels.mirror_index(start + 1, crop))
        inside[o] = True
    return i0, i1, w0, w1, inside


def _zoom_tables(length: int, severity: int) -> Tables:
    per_factor = [_zoom_axis(length, float(z)) for z in _ZOOM_FACTORS[severity - 1]]
    return tuple(np.stack(part) for part in zip(*per_factor, strict=True))  # type: ignore[return-value]


def _zoom_blur(image: np.ndarray, severity: int) -> np.ndarray:
    x = (image / 255.0).astype(np.float32)
    out = np.zeros_like(x)
    height, width = x.shape[:2]
    _kernels.zoom_sum(x, _zoom_tables(height, severity), _zoom_tables(width, severity), out)
    mean = (x + out) / (len(_ZOOM_FACTORS[severity - 1]) + 1)
    return np.uint8(np.clip(mean, 0, 1) * 255)


def _motion_taps(
    radius: int, sigma: float, angle: float, shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dy, dx, weight) per tap of the library's `_motion_blur`, stopping where it stops."""
    width = radius * 2 + 1
    kernel = lib.getMotionBlurKernel(width, sigma)
    point = (width * np.sin(np.deg2rad(angle)), width * np.cos(np.deg2rad(angle)))
    hypot = math.hypot(point[0], point[1])
    dys, dxs = [], []
    for i in range(width):
        dy = -math.ceil(((i * point[0]) / hypot) - 0.5)
        dx = -math.ceil(((i * point[1]) / hypot) - 0.5)
        if abs(dy) >= shape[0] or abs(dx) >= shape[1]:
            break  # the library stops here: the remaining taps' weight is lost
        dys.append(dy)
        dxs.append(dx)
    weights = np.ascontiguousarray(kernel[: len(dys)])
    return np.array(dys, np.int64), np.array(dxs, np.int64), weights


def _motion_blur(image: np.ndarray, severity: int) -> np.ndarray:
    radius, sigma = _MOTION[severity - 1]
    angle = np.random.uniform(-45, 45)
    taps = _motion_taps(radius, sigma, angle, image.shape)
    return np.uint8(np.clip(_kernels.shift_sum(image, *taps), 0, 255))


def _snow(image: np.ndarray, severity: int) -> np.ndarray:
    loc, scale, zoom, threshold, radius, sigma, keep = _SNOW[severity - 1]
    x = np.array(image, dtype=np.float32) / 255.0
    layer = np.random.normal(size=x.shape[:2], loc=loc, scale=scale)
    layer = lib.clipped_zoom(layer[..., np.newaxis], zoom)
    layer[layer < threshold] = 0
    layer = np.clip(layer, 0, 1)
    taps = _motion_taps(radius, sigma, np.random.uniform(-135, -45), layer.shape)
    layer = _kernels.shift_sum(layer, *taps)
    layer = np.round(layer * 255).astype(np.uint8) / 255.0
    layer = layer[: x.shape[0], : x.shape[1], :]
    import cv2

    grey = cv2.cvtColor(x, cv2.COLOR_RGB2GRAY).reshape(x.shape[0], x.shape[1], 1)
    x = keep * x + (1 - keep) * np.maximum(x, grey * 1.5 + 0.5)
    return np.uint8(np.clip(x + layer + np.rot90(layer, k=2), 0, 1) * 255)


def _glass_blur(image: np.ndarray, severity: int, seed: int) -> np.ndarray:
    sigma, max_delta, iterations = _GLASS[severity - 1]
    sigmas = (sigma, sigma, 0)  # skimage's gaussian(channel_axis=-1): mode 'nearest'
    x = np.uint8(ndimage.gaussian_filter(image / 255.0, sigmas, mode="nearest") * 255)
    _kernels.glass_shuffle(x, max_delta, iterations, seed)
    blurred = ndimage.gaussian_filter(x / 255.0, sigmas, mode="nearest")
    return np.uint8(np.clip(blurred, 0, 1) * 255)


@functools.lru_cache(maxsize=32)
def _frost_layer(index: int, height: int, width: int) -> np.ndarray:
    """The frost photograph `index` (BGR) resized as the library resizes it for this size."""
    import cv2

    ref = importlib.resources.files("imagecorruptions") / "frost" / _FROST_FILES[index]
    with importlib.resources.as_file(ref) as path:
        frost = cv2.imread(str(path))
    if frost is None:
        raise FileNotFoundError(f"imagecorruptions' frost image {ref} cannot be read")
    fh, fw = frost.shape[:2]
    # The library's case analysis comes to: scaled up until it covers the image, then by 1.1.
    scaling = max(1.0, height / fh, width / fw) * 1.1
    size = (int(np.ceil(fw * scaling)), int(np.ceil(fh * scaling)))
    resized = cv2.resize(frost, dsize=size, interpolation=cv2.INTER_CUBIC)
    resized.flags.writeable = False
    return resized


def _frost(image: np.ndarray, severity: int) -> np.ndarray:
    keep, weight = _FROST[severity - 1]
    height, width = image.shape[:2]
    frost = _frost_layer(np.random.randint(6), height, width)
    top = np.random.randint(0, frost.shape[0] - height)
    left = np.random.randint(0, frost.shape[1] - width)
    crop = frost[top : top + height, left : left + width][..., [2, 1, 0]]
    return np.uint8(np.clip(keep * image + weight * crop, 0, 255))


def _hsv(s_scale: float, s_shift: float, v_shift: float, image: np.ndarray) -> np.ndarray:
    out = np.empty_like(image)
    _kernels.hsv_adjust(image, float(s_scale), float(s_shift), float(v_shift), out)
    return out


def _elastic_transform(image: np.ndarray, severity: int) -> np.ndarray:
    x = np.array(image, dtype=np.float32) / 255.0
    height, width = x.shape[:2]
    sigma = np.array((height, width)) * 0.01
    alpha = _ELASTIC_ALPHA[severity - 1]
    max_d = height * 0.005
    shifts = []
    for _ in range(2):  # dx, then dy, as the library draws them
        noise = np.random.uniform(-max_d, max_d, size=(height, width))
        smooth = ndimage.gaussian_filter(noise, sigma, mode="reflect", truncate=3)
        shifts.append((smooth * alpha).astype(np.float32))
    out = np.empty(x.shape, np.uint8)
    _kernels.elastic_sample(x, shifts[1], shifts[0], out)
    return out


# name -> function(image, severity, seed); the global RNG is already seeded with `seed`.
_FAST: dict[str, Callable[[np.ndarray, int, int], np.ndarray]] = {
    "zoom_blur": lambda image, severity, seed: _zoom_blur(image, severity),
    "motion_blur": lambda image, severity, seed: _motion_blur(image, severity),
    "snow": lambda image, severity, seed: _snow(image, severity),
    "glass_blur": _glass_blur,
    "frost": lambda image, severity, seed: _frost(image, severity),
    "brightness": lambda image, severity, seed: _hsv(1.0, 0.0, _BRIGHTNESS[severity - 1], image),
    "saturate": lambda image, severity, seed: _hsv(*_SATURATE[severity - 1], 0.0, image),
    "elastic_transform": lambda image, severity, seed: _elastic_transform(image, severity),
}
FAST_NAMES = frozenset(_FAST)


def _run_fast(image: np.ndarray, name: str, severity: int, seed: int) -> np.ndarray:
    with seeded_global_rng(seed):
        return _FAST[name](np.ascontiguousarray(image), severity, seed)


def corrupt_fast(image: np.ndarray, name: str, severity: int, seed: int) -> np.ndarray:
    """`corrupt_reference(image, name, severity, seed)`, computed faster where possible."""
    if name not in _FAST:
        return corrupt_reference(image, name, severity, seed)
    return with_small_image_padding(_run_fast, image, name, severity, seed)
