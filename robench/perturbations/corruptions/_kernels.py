"""numba kernels behind `fast.py`, each repeating the library's floating-point operations.

Every kernel performs, per output value, the same IEEE operations in the same order as the
numpy, SciPy or scikit-image code it replaces (no fastmath, so LLVM neither reorders nor fuses
them): that makes the fast corruptions bit-identical. Kernels are cached on disk
(`cached_njit`), so only the first process on a machine pays the compile time.
"""

from __future__ import annotations

import math

import numpy as np

from robench._core.jit import cached_njit

_jit = cached_njit


@_jit
def glass_shuffle(x: np.ndarray, max_delta: int, iterations: int, seed: int) -> None:
    """The library's `_shuffle_pixels_njit_glass_blur`, in place, with the same numba RNG.

    Its `randint(-d, d, size=(2,))` is two scalar draws in order (dx, then dy), so two scalar
    calls give the same numbers without an allocation per pixel. Its "swap" `x[h, w],
    x[h', w'] = x[h', w'], x[h, w]` assigns pixel *views*, so it only copies x[h', w'] into
    x[h, w]: that copy is what is done here.
    """
    np.random.seed(seed)
    height, width, channels = x.shape
    for _ in range(iterations):
        for h in range(height - max_delta, max_delta, -1):
            for w in range(width - max_delta, max_delta, -1):
                dx = np.random.randint(-max_delta, max_delta)
                dy = np.random.randint(-max_delta, max_delta)
                for c in range(channels):
                    x[h, w, c] = x[h + dy, w + dx, c]


@_jit
def shift_sum(x: np.ndarray, dys: np.ndarray, dxs: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sum_i weights[i] * x shifted by (dys[i], dxs[i]), edges replicated; float64 (H, W, C):
    the library's `_motion_blur` products in the same tap order, row by row without copies."""
    height, width, channels = x.shape
    flat = x.reshape(height, width * channels)
    acc = np.zeros((height, width * channels))
    last = (width - 1) * channels
    for h in range(height):
        row = acc[h]
        for i in range(weights.shape[0]):
            k, dy, dx = weights[i], dys[i], dxs[i]
            lo, hi = max(dx, 0) * channels, min(width + dx, width) * channels  # 0 <= w-dx < W
            offset = dx * channels
            src = flat[min(max(h - dy, 0), height - 1)]
            for j in range(lo):
                row[j] += k * np.float64(src[j % channels])
            inner, shifted = row[lo:hi], src[lo - offset : hi - offset]
            for j in range(hi - lo):  # non-negative indices: the loop vectorises
                inner[j] += k * np.float64(shifted[j])
            for j in range(hi, width * channels):
                row[j] += k * np.float64(src[last + j % channels])
    return acc.reshape(height, width, channels)


@_jit
def zoom_sum(
    x: np.ndarray,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    cols: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    out: np.ndarray,
) -> None:
    """out (float32) += each zoomed layer in turn, as `scipy.ndimage.zoom(order=1)` computes
    it from `rows` and `cols` (`fast._zoom_axis` per zoom factor)."""
    ry0, ry1, wy0, wy1, y_in = rows
    cx0, cx1, wx0, wx1, x_in = cols
    channels = x.shape[2]
    for f in range(ry0.shape[0]):
        for i in range(out.shape[0]):
            if not y_in[f, i]:
                continue
            a0, a1, u0, u1 = x[ry0[f, i]], x[ry1[f, i]], wy0[f, i], wy1[f, i]
            for j in range(out.shape[1]):
                if not x_in[f, j]:
                    continue
                b0, b1, v0, v1 = cx0[f, j], cx1[f, j], wx0[f, j], wx1[f, j]
                for c in range(channels):
                    t = 0.0
                    t += (np.float64(a0[b0, c]) * u0) * v0
                    t += (np.float64(a0[b1, c]) * u0) * v1
                    t += (np.float64(a1[b0, c]) * u1) * v0
                    t += (np.float64(a1[b1, c]) * u1) * v1
                    out[i, j, c] = out[i, j, c] + np.float32(t)


@_jit
def hsv_adjust(
    x: np.ndarray, s_scale: float, s_shift: float, v_shift: float, out: np.ndarray
) -> None:
    """uint8 RGB -> skimage `rgb2hsv`, s = clip(s * s_scale + s_shift), v = clip(v + v_shift),
    `hsv2rgb`, then clip(0, 1) * 255 truncated to uint8: brightness and saturate per pixel."""
    height, width = x.shape[0], x.shape[1]
    for i in range(height):
        for j in range(width):
            r = np.float64(x[i, j, 0]) / 255.0
            g = np.float64(x[i, j, 1]) / 255.0
            b = np.float64(x[i, j, 2]) / 255.0
            v = max(r, g, b)
            delta = v - min(r, g, b)
            h = s = 0.0
            if delta != 0.0:
                s = delta / v
                if r == v:
                    h = (g - b) / delta
                if g == v:
                    h = 2.0 + (b - r) / delta
                if b == v:
                    h = 4.0 + (r - g) / delta
                h = (h / 6.0) % 1.0
            if s_scale != 1.0 or s_shift != 0.0:
                s = min(max(s * s_scale + s_shift, 0.0), 1.0)
            if v_shift != 0.0:
                v = min(max(v + v_shift, 0.0), 1.0)
            hi = math.floor(h * 6)
            f = h * 6 - hi
            p = v * (1 - s)
            q = v * (1 - f * s)
            t = v * (1 - (1 - f) * s)
            sector = np.uint8(hi) % 6
            rgb = ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q))[sector]
            for c in range(3):
                out[i, j, c] = np.uint8(min(max(rgb[c], 0.0), 1.0) * 255)


@_jit
def _reflect(cc: float, length: int) -> float:
    """scipy's `map_coordinate` for mode 'reflect' (ni_interpolation.c)."""
    if cc < 0:
        if length <= 1:
            return 0.0
        sz2 = 2 * length
        if cc < -sz2:
            cc = sz2 * int(-cc / sz2) + cc
        return cc + sz2 if cc < -length else -cc - 1
    if cc > length - 1:
        if length <= 1:
            return 0.0
        sz2 = 2 * length
        cc -= sz2 * int(cc / sz2)
        if cc >= length:
            cc = sz2 - cc - 1
    return cc


@_jit
def mirror_index(idx: int, length: int) -> int:
    """Index of a spline tap outside the input, mirrored about the edge sample (d c b | a b c)."""
    if length <= 1:
        return 0
    s2 = 2 * length - 2
    if idx < 0:
        idx = s2 * (-idx // s2) + idx
        return idx + s2 if idx <= 1 - length else -idx
    if idx >= length:
        idx -= s2 * (idx // s2)
        if idx >= length:
            idx = s2 - idx
    return idx


@_jit
def _reflect_index(idx: int, length: int) -> int:
    """Index of a spline tap outside the input, reflected about the edge (b a | a b c);
    what scipy uses for mode 'reflect' (checked against `map_coordinates`)."""
    idx %= 2 * length
    return 2 * length - 1 - idx if idx >= length else idx


@_jit
def elastic_sample(image: np.ndarray, dy: np.ndarray, dx: np.ndarray, out: np.ndarray) -> None:
    """`map_coordinates(image, (y + dy, x + dx, c), order=1, mode='reflect')`, then
    clip(0, 1) * 255 in float32, truncated to uint8. The channel weights are exactly 1 and 0,
    so scipy's 8-term sum reduces to these 4 terms in the same order; 'reflect' interpolates
    the half-sample-symmetric extension (b a | a b c d | d c)."""
    height, width, channels = image.shape
    for i in range(height):
        for j in range(width):
            cy = _reflect(np.float64(i) + np.float64(dy[i, j]), height)
            cx = _reflect(np.float64(j) + np.float64(dx[i, j]), width)
            y0, x0 = math.floor(cy), math.floor(cx)
            wy0 = 1.0 - (cy - y0)
            wy1 = 1.0 - wy0
            wx0 = 1.0 - (cx - x0)
            wx1 = 1.0 - wx0
            ya, yb = _reflect_index(y0, height), _reflect_index(y0 + 1, height)
            xa, xb = _reflect_index(x0, width), _reflect_index(x0 + 1, width)
            for c in range(channels):
                t = 0.0
                t += (np.float64(image[ya, xa, c]) * wy0) * wx0
                t += (np.float64(image[ya, xb, c]) * wy0) * wx1
                t += (np.float64(image[yb, xa, c]) * wy1) * wx0
                t += (np.float64(image[yb, xb, c]) * wy1) * wx1
                value = min(max(np.float32(t), np.float32(0)), np.float32(1))
                out[i, j, c] = np.uint8(value * np.float32(255))
