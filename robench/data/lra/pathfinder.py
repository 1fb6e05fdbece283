"""Pathfinder (LRA's Pathfinder task) as released: images plus metadata naming their labels.

The metadata (text despite `.npy`, read as LRA's builder lra_benchmarks/data/pathfinder.py
reads it), which folder ROOT may be, item order and splits: docs/datasets.md, "Long Range
Arena".
"""

from __future__ import annotations

import logging
import re
import stat
from pathlib import Path

import numpy as np
from PIL import Image

from robench._core.errors import ConfigError, DataError, shown_names
from robench.data.image_folder import IMAGE_ERRORS
from robench.data.lra.sequences import SequenceDataset

logger = logging.getLogger(__name__)

# Difficulty folders, easiest first.
DIFFICULTIES = ("curv_baseline", "curv_contour_length_9", "curv_contour_length_14")
CLASSES = ["disconnected", "connected"]
_NPY_MAGIC = b"\x93NUMPY"
_FIELDS = 4  # folder, file, index, label (the release has 11; only these are read)
_SPLITS = {"train": (0.0, 0.8), "val": (0.8, 0.9), "test": (0.9, 1.0)}


def _is_difficulty_folder(folder: Path) -> bool:
    return (folder / "metadata").is_dir() or (folder / "imgs").is_dir()


def looks_like_pathfinder(root: Path) -> bool:
    # The release root (pathfinder32/ beside the other tasks' folders) is not detected: it
    # holds every task's data, so it is read by layout name.
    in_root = any((root / name).is_dir() for name in DIFFICULTIES)
    return in_root or (root.name in DIFFICULTIES and _is_difficulty_folder(root))


def difficulty_folder(root: Path, difficulty: str | None) -> Path:
    """The difficulty folder ROOT names or holds (see the module docstring)."""
    if difficulty is not None and difficulty not in DIFFICULTIES:
        raise ConfigError(
            f"unknown Pathfinder difficulty {difficulty!r}; expected one of "
            f"{shown_names(list(DIFFICULTIES))}."
        )
    if _is_difficulty_folder(root) and difficulty in (None, root.name):
        return root
    for base in (root, root / "pathfinder32"):
        present = [name for name in DIFFICULTIES if (base / name).is_dir()]
        if difficulty is not None and difficulty in present:
            return base / difficulty
        if difficulty is None and present:
            if len(present) > 1:
                logger.info("reading Pathfinder's %s (of %s)", present[-1], ", ".join(present))
            return base / present[-1]
    if _is_difficulty_folder(root) and root.name not in DIFFICULTIES:
        return root  # a difficulty folder under another name, asked for by difficulty
    wanted = difficulty or " or ".join(DIFFICULTIES)
    raise DataError(
        f"{root} is not a Pathfinder folder: it has no {wanted} folder and no imgs/ and "
        "metadata/; expected LRA's pathfinder32/<difficulty>/imgs/<n>/*.png with "
        "pathfinder32/<difficulty>/metadata/<n>.npy."
    )


def _metadata_files(folder: Path) -> list[Path]:
    files = [p for p in (folder / "metadata").glob("*.npy") if p.is_file()]
    if not files:
        raise DataError(
            f"Pathfinder folder {folder} has no metadata (metadata/<n>.npy naming each image "
            "and its label), so its images have no labels; copy the metadata folder of the "
            "release beside imgs/."
        )
    return sorted(files, key=lambda p: (int(p.stem), "") if p.stem.isdigit() else (1 << 62, p.stem))


def _metadata_rows(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, fields) of each row of one metadata file, text or NumPy array."""
    raw = path.read_bytes()
    if raw.startswith(_NPY_MAGIC):
        try:
            array = np.load(path, allow_pickle=False)
        except ValueError as exc:
            raise DataError(
                f"{path} is a NumPy file of Python objects ({exc}), which robench does not "
                "unpickle; write the metadata as text lines (as the LRA release does) or as an "
                "array of strings."
            ) from None
        if array.ndim != 2 or array.dtype.kind not in "US":
            raise DataError(
                f"{path} holds a {array.dtype} array of shape {array.shape}; expected a 2-D "
                "array of strings, one row per image (folder, file, index, label, ...)."
            )
        rows = [[str(v.decode() if isinstance(v, bytes) else v) for v in row] for row in array]
        return list(enumerate(rows, start=1))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(
            f"{path} is neither text nor a NumPy array; expected Pathfinder metadata, one "
            "line per image: imgs/<n> sample_<i>.png <i> <label> ..."
        ) from None
    return [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


_LABEL = re.compile(r"^[01](\.0*)?$")


def _image_path(folder: Path, metadata: Path, line: int, fields: list[str]) -> Path:
    where = f"{metadata} line {line}"
    if len(fields) < _FIELDS or not _LABEL.match(fields[3]):
        raise DataError(
            f"{where} is {' '.join(fields)[:80]!r}; expected `imgs/<n> sample_<i>.png <i> "
            "<label> ...` with label 0 or 1, as in the Pathfinder release; fix or remove it."
        )
    relative = Path(fields[0]) / fields[1]
    if relative.is_absolute() or ".." in relative.parts:
        raise DataError(
            f"{where} names {relative}, outside {folder}; metadata must name images inside "
            "the difficulty folder (imgs/<n>/sample_<i>.png)."
        )
    return folder / relative


class PathfinderPixels:
    """Images decoded when read: each a uint8 row-major (H * W,) array of grey levels."""

    def __init__(self, paths: list[Path], shape: tuple[int, int]) -> None:
        self.paths = paths
        self.shape = shape

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> np.ndarray:
        path = self.paths[index]
        try:
            with Image.open(path) as image:
                image.load()
                pixels = np.asarray(image if image.mode == "L" else image.convert("L"))
        except IMAGE_ERRORS as exc:
            raise DataError(f"cannot decode image {path} ({exc}); replace or remove it.") from None
        if pixels.shape != self.shape:
            raise DataError(
                f"{path} is {pixels.shape[1]}x{pixels.shape[0]}, but the first image is "
                f"{self.shape[1]}x{self.shape[0]}; every Pathfinder image of a folder has one "
                "size."
            )
        return pixels.reshape(-1)


def _file_size(path: Path) -> int | None:
    """The size of the regular file at `path`; None when there is none."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def _image_shape(path: Path) -> tuple[int, int]:
    try:
        with Image.open(path) as image:
            return image.height, image.width
    except IMAGE_ERRORS as exc:
        raise DataError(f"cannot decode image {path} ({exc}); replace or remove it.") from None


def _labelled_images(folder: Path) -> tuple[list[Path], list[int]]:
    paths: list[Path] = []
    labels: list[int] = []
    empty = 0
    for metadata in _metadata_files(folder):
        for line, fields in _metadata_rows(metadata):
            path = _image_path(folder, metadata, line, fields)
            size = _file_size(path)  # one stat per image: the release has 600,000
            if size is None:
                raise DataError(
                    f"{metadata} line {line} names {path}, which is not a file; restore the "
                    "image or remove the line."
                )
            if size == 0:
                empty += 1
                continue
            paths.append(path)
            labels.append(int(float(fields[3])))
    if empty:
        logger.warning("left out %d empty Pathfinder image(s) in %s, as LRA does", empty, folder)
    if not paths:
        raise DataError(f"the metadata of {folder} names no images; expected Pathfinder data.")
    return paths, labels


def open_pathfinder(
    root: Path,
    split: str,
    max_length: int | None,
    truncate: bool | None,
    difficulty: str | None = None,
) -> SequenceDataset:
    """One split of a Pathfinder difficulty as pixel sequences (H * W grey levels)."""
    folder = difficulty_folder(root, difficulty)
    paths, labels = _labelled_images(folder)
    low, high = _SPLITS[split]
    chosen = slice(int(len(paths) * low), int(len(paths) * high))
    shape = _image_shape(paths[0])
    length = shape[0] * shape[1]
    if max_length is not None and max_length != length:
        raise DataError(
            f"max_length {max_length} does not fit {folder}, whose images are "
            f"{shape[1]}x{shape[0]} = {length} pixels; leave max_length out."
        )
    return SequenceDataset(
        root=root,
        task_name="pathfinder",
        split=split,
        sequences=PathfinderPixels(paths[chosen], shape),
        targets=labels[chosen],
        classes=list(CLASSES),
        vocab_size=256,
        max_length=length,
        pad_id=None,
        class_index_note="the metadata's label: 1 when the two marked points are connected",
        preprocessing_note=f"Pathfinder difficulty {folder.name}",
        files=[path.relative_to(root).as_posix() for path in paths[chosen]],
    )
