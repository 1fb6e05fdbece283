"""Pathfinder (Linsley et al. 2018) at 32 x 32, generated seeded and offline.

LRA's Pathfinder32 settings (lra_benchmarks/data/pathfinder.py) on a simplified renderer:
dashes along the 8 pixel directions, no anti-aliasing, and paths kept 3 pixels apart so that
the label is the markers' connectivity through lit pixels; docs/datasets.md, "Generated
ListOps and Pathfinder".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
from PIL import Image

from robench.data.lra.pathfinder import DIFFICULTIES

logger = logging.getLogger(__name__)

# The 8 pixel directions, 45 degrees apart, in turning order.
DIRECTIONS = ((0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1))
DASH_PIXELS = 2  # Linsley's paddle_length at 32 x 32
GAP = 2  # Chebyshev distance between consecutive dashes of a path (a 1-pixel gap)
CLEARANCE = 3  # least Chebyshev distance between two paths
DASH_VALUE = 191  # grey level of dashes (Linsley's paddle contrast 0.75)
MARKER_VALUE = 255
# Dashes per target path in each difficulty folder (Linsley's contour_length).
CONTOUR_LENGTHS = dict(zip(DIFFICULTIES, (6, 9, 14), strict=True))
IMAGES_PER_BATCH = 1000  # images per imgs/<n> folder and metadata/<n>.npy file
Pixels = list[tuple[int, int]]  # (row, column) of each pixel of a path, in order


@dataclass(frozen=True)
class PathfinderSpec:
    """How one difficulty draws its images."""

    contour_length: int = 14  # dashes per target path
    size: int = 32  # image side, pixels
    padding: int = 1  # border no dash enters
    seed_distance: float = 7.0  # distance between the two targets' starts
    straight_p: float = 0.5  # probability that a dash keeps the previous dash's direction

    @property
    def distractor_length(self) -> int:
        return max(1, self.contour_length // 3)

    @property
    def distractors(self) -> int:
        return 20 // self.distractor_length


@dataclass(frozen=True)
class PathfinderImage:
    """One drawn image, its label, and the centres of its two markers (row, column)."""

    pixels: np.ndarray  # (size, size) uint8
    label: int
    markers: tuple[tuple[int, int], tuple[int, int]]


class _Canvas:
    """Which path owns each pixel (its dashes, and the marker blocks of a target's ends)."""

    def __init__(self, spec: PathfinderSpec) -> None:
        self.spec = spec
        self.owner = np.full((spec.size, spec.size), -1, dtype=np.int16)
        self.dashes: list[Pixels] = []

    def inside(self, pixel: tuple[int, int]) -> bool:
        low, high = self.spec.padding, self.spec.size - self.spec.padding
        return low <= pixel[0] < high and low <= pixel[1] < high

    def clear_of_others(self, pixel: tuple[int, int], path: int, reach: int) -> bool:
        """No other path owns a pixel within `reach` (Chebyshev) of `pixel`."""
        r, c = pixel
        window = self.owner[max(0, r - reach) : r + reach + 1, max(0, c - reach) : c + reach + 1]
        return bool(np.all((window == -1) | (window == path)))


def _block(centre: tuple[int, int]) -> Pixels:
    r, c = centre
    return [(r + dr, c + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)]


def _dash_fits(canvas: _Canvas, dash: Pixels, path: int, earlier: Pixels) -> bool:
    for pixel in dash:
        if not canvas.inside(pixel) or not canvas.clear_of_others(pixel, path, CLEARANCE - 1):
            return False
        # Not touching its own path's earlier dashes: the gaps between dashes stay open.
        if any(max(abs(pixel[0] - e[0]), abs(pixel[1] - e[1])) < GAP for e in earlier):
            return False
    return True


def _turns(rng: np.random.Generator, direction: int, spec: PathfinderSpec) -> list[int]:
    """The next dash's directions to try: straight on first with probability straight_p, the
    two 45-degree turns in random order."""
    turns = [(direction - 1) % 8, (direction + 1) % 8]
    rng.shuffle(turns)
    straight_first = rng.random() < spec.straight_p
    return [direction, *turns] if straight_first else [*turns, direction]


def _block_clear(canvas: _Canvas, centre: tuple[int, int], path: int) -> bool:
    """A marker block at `centre` lies in the image and clear of the other paths."""
    size = canvas.spec.size
    return all(
        0 <= p[0] < size and 0 <= p[1] < size and canvas.clear_of_others(p, path, CLEARANCE - 1)
        for p in _block(centre)
    )


def _grow(
    canvas: _Canvas,
    rng: np.random.Generator,
    start: tuple[int, int],
    direction: int,
    dashes: int,
    *,
    marked_ends: bool,
) -> Pixels | None:
    """Draw a path of `dashes` dashes from `start`, committed to the canvas; None (nothing
    committed) when it does not fit. `marked_ends` reserves a marker block at each end.

    A depth-first search over each dash's turns (backing up from a dead end), within a budget
    of dashes tried, so that long paths find their way in a small image."""
    path = len(canvas.dashes)
    if marked_ends and not _block_clear(canvas, start, path):
        return None
    pixels: Pixels = []
    budget = [_DASH_BUDGET]

    def extend(head: tuple[int, int], step: tuple[int, int], direction: int, number: int) -> bool:
        if number == dashes:
            return not marked_ends or _block_clear(canvas, pixels[-1], path)
        options = [direction] if number == 0 else _turns(rng, direction, canvas.spec)
        for option in options:
            budget[0] -= 1
            if budget[0] < 0:
                return False
            dr, dc = DIRECTIONS[option]
            # The next dash starts 2 pixels on from the last one's end: one pixel of gap.
            first = head if number == 0 else (head[0] + step[0] + dr, head[1] + step[1] + dc)
            dash = [first, (first[0] + dr, first[1] + dc)]
            if _dash_fits(canvas, dash, path, pixels):
                pixels.extend(dash)
                if extend(dash[-1], (dr, dc), option, number + 1):
                    return True
                del pixels[-len(dash) :]
        return False

    if not extend(start, DIRECTIONS[direction], direction, 0):
        return None
    footprint = pixels + (_block(pixels[0]) + _block(pixels[-1]) if marked_ends else [])
    for r, c in footprint:
        canvas.owner[r, c] = path
    canvas.dashes.append(pixels)
    return pixels


def _random_pixel(rng: np.random.Generator, spec: PathfinderSpec, margin: int) -> tuple[int, int]:
    low, high = spec.padding + margin, spec.size - spec.padding - margin
    return int(rng.integers(low, high)), int(rng.integers(low, high))


def _targets(canvas: _Canvas, rng: np.random.Generator) -> tuple[Pixels, Pixels] | None:
    """The two target paths, starting seed_distance apart; None when they do not fit."""
    spec = canvas.spec
    # Linsley seeds the first target at least 2 * seed_distance from every border: near the
    # centre at 32 x 32, so that both targets have room to run.
    margin = min(int(2 * spec.seed_distance), spec.size // 2 - 2) - spec.padding
    target = partial(_grow, canvas, rng, dashes=spec.contour_length, marked_ends=True)
    first = target(_random_pixel(rng, spec, margin), int(rng.integers(8)))
    if first is None:
        return None
    for _ in range(_TRIES):
        angle = np.deg2rad(rng.integers(0, 360))
        start = (
            round(float(first[0][0] + spec.seed_distance * np.sin(angle))),
            round(float(first[0][1] + spec.seed_distance * np.cos(angle))),
        )
        second = target(start, int(rng.integers(8)))
        if second is not None:
            return first, second
    return None


def _add_distractors(canvas: _Canvas, rng: np.random.Generator) -> None:
    """Up to `distractors` short paths wherever they fit (Linsley's allow_incomplete)."""
    spec = canvas.spec
    for _ in range(spec.distractors):
        for _ in range(_TRIES):
            start = _random_pixel(rng, spec, 0)
            direction = int(rng.integers(8))
            if _grow(canvas, rng, start, direction, spec.distractor_length, marked_ends=False):
                break


_DASH_BUDGET = 200  # dashes tried for one path (its search's budget)
_TRIES = 30  # placements tried for one path before giving up on it
_IMAGE_TRIES = 1000  # fresh canvases tried for one image


def draw_pathfinder(
    rng: np.random.Generator, spec: PathfinderSpec, label: int | None = None
) -> PathfinderImage:
    """One image: targets, distractors and markers; `label` (else drawn at random) says
    whether the markers go on the two ends of one target (1) or on two targets (0)."""
    label = int(rng.integers(2)) if label is None else label
    for _ in range(_IMAGE_TRIES):
        canvas = _Canvas(spec)
        targets = _targets(canvas, rng)
        if targets is None:
            continue
        _add_distractors(canvas, rng)
        origin = int(rng.integers(2))  # the target whose start carries the first marker
        markers = (
            targets[origin][0],
            targets[origin][-1] if label == 1 else targets[1 - origin][-1],
        )
        pixels = np.zeros((spec.size, spec.size), dtype=np.uint8)
        for pixel in (pixel for path in canvas.dashes for pixel in path):
            pixels[pixel] = DASH_VALUE
        for pixel in _block(markers[0]) + _block(markers[1]):
            pixels[pixel] = MARKER_VALUE
        return PathfinderImage(pixels, label, markers)
    raise RuntimeError(f"could not fit two paths of {spec.contour_length} dashes in {spec.size}px")


def _metadata_line(batch: int, index: int, label: int, spec: PathfinderSpec) -> str:
    """The release's 11 fields: folder, file, index, label, then this generator's settings
    where Linsley's has his (max turn in degrees, contour and distractor length, dash length,
    thickness, gap, contrasts)."""
    settings = [45, spec.contour_length, spec.distractor_length, DASH_PIXELS, 1, GAP - 1, 1]
    return " ".join(map(str, [f"imgs/{batch}", f"sample_{index}.png", index, label, *settings]))


def write_pathfinder(
    out: Path, count: int, seed: int, difficulties: tuple[str, ...] = DIFFICULTIES
) -> list[Path]:
    """Write `count` images of each difficulty into `out` (which must exist) in the released
    layout; the difficulty folders written. Each difficulty draws from its own stream."""
    written = []
    for difficulty in difficulties:
        spec = PathfinderSpec(contour_length=CONTOUR_LENGTHS[difficulty])
        rng = np.random.default_rng([seed, DIFFICULTIES.index(difficulty)])
        folder = out / difficulty
        (folder / "metadata").mkdir(parents=True)
        for batch, first in enumerate(range(0, count, IMAGES_PER_BATCH)):
            images = folder / "imgs" / str(batch)
            images.mkdir(parents=True)
            lines = []
            for index in range(min(IMAGES_PER_BATCH, count - first)):
                image = draw_pathfinder(rng, spec)
                Image.fromarray(image.pixels).save(images / f"sample_{index}.png")
                lines.append(_metadata_line(batch, index, image.label, spec))
            (folder / "metadata" / f"{batch}.npy").write_text("\n".join(lines) + "\n")
        logger.debug("wrote %d Pathfinder images to %s", count, folder)
        written.append(folder)
    return written
