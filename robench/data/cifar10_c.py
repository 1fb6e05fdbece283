"""CIFAR-10-C (Hendrycks & Dietterich, 2019): `ROOT/<corruption>.npy` and `ROOT/labels.npy`,
severity k being rows (k-1)N .. kN-1 (docs/datasets.md, "The layouts"). Files are
memory-mapped, so a member reads only the rows it is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from robench._core.errors import DataError, shown_names
from robench.data.corruption_family import ALL_CORRUPTIONS, SEVERITIES, CorruptionFamily
from robench.data.labeled import LabeledImages
from robench.data.preprocessing import Preprocessing

KIND = "cifar10-c"
LABELS_FILE = "labels.npy"

CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)


def looks_like_cifar10_c(root: Path) -> bool:
    """True when ROOT holds labels.npy and at least one corruption .npy file."""
    return (root / LABELS_FILE).is_file() and any(
        (root / f"{name}.npy").is_file() for name in ALL_CORRUPTIONS
    )


def _load(path: Path) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DataError(
            f"cannot read {path} as a numpy array ({exc}); replace it with the file from the "
            "CIFAR-10-C release."
        ) from None


def _labels(root: Path) -> np.ndarray:
    path = root / LABELS_FILE
    labels = _load(path)
    if labels.ndim != 1 or labels.dtype.kind not in "iu" or len(labels) % len(SEVERITIES):
        raise DataError(
            f"{path} holds {labels.dtype} data of shape {labels.shape}; expected integer labels "
            f"of shape ({len(SEVERITIES)} * N,) (50000 in the release)."
        )
    if len(labels) and (labels.min() < 0 or labels.max() >= len(CIFAR10_CLASSES)):
        raise DataError(
            f"{path} holds labels {int(labels.min())} .. {int(labels.max())}; expected CIFAR-10 "
            f"labels 0 .. {len(CIFAR10_CLASSES) - 1}."
        )
    blocks = np.asarray(labels).reshape(len(SEVERITIES), -1)
    for k, block in enumerate(blocks[1:], start=2):
        if not np.array_equal(block, blocks[0]):
            row = int(np.flatnonzero(block != blocks[0])[0])
            raise DataError(
                f"{path} is not one label list repeated per severity: row {row} of severity {k} "
                f"is {int(block[row])} but {int(blocks[0][row])} in severity 1; use the "
                "labels.npy of the CIFAR-10-C release."
            )
    return blocks[0]


def _images(path: Path, rows: int) -> np.ndarray:
    images = _load(path)
    if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
        raise DataError(
            f"{path} holds {images.dtype} data of shape {images.shape}; expected uint8 images "
            f"of shape ({rows}, 32, 32, 3) (severities 1 .. 5 stacked)."
        )
    if len(images) != rows:
        raise DataError(
            f"{path} has {len(images)} rows but {LABELS_FILE} has {rows} labels; expected one "
            "label per row, the files do not belong together."
        )
    return images


class ArrayRows(LabeledImages):
    """Rows `start` .. `start + len(targets) - 1` of a memory-mapped uint8 (N, H, W, C) file."""

    kind = KIND
    native_channels = 3

    def __init__(
        self,
        root: Path,
        path: Path,
        start: int,
        targets: list[int],
        preprocessing: Preprocessing,
        array: np.ndarray | None = None,
    ) -> None:
        # The .npy file and the first row this dataset reads.
        self.path, self.start = path, start
        # The memory map when already open (shared by the severities of one file).
        self._array = array
        super().__init__(
            root=root,
            classes=list(CIFAR10_CLASSES),
            class_index_note="class indices are the labels stored in labels.npy (CIFAR-10 order)",
            targets=targets,
            preprocessing=preprocessing,
        )

    @property
    def array(self) -> np.ndarray:
        """The whole memory-mapped file (opened on first use, also after unpickling)."""
        if self._array is None:
            self._array = _load(self.path)
        return self._array

    def __getstate__(self) -> dict[str, Any]:
        # A memory map pickles as a full copy: send the path and reopen in the worker instead.
        return {**self.__dict__, "_array": None}

    def _load_image(self, index: int) -> torch.Tensor:
        return self.preprocessing(np.asarray(self.array[self.start + index]))


class Cifar10C(CorruptionFamily):
    """CIFAR-10-C: a member per (corruption file, severity), each a block of rows."""

    kind = KIND

    def __init__(self, root: str | Path, preprocessing: Preprocessing) -> None:
        root = Path(root)
        unknown = sorted(
            p.name
            for p in root.glob("*.npy")
            if p.name != LABELS_FILE and p.stem not in ALL_CORRUPTIONS
        )
        if unknown:
            raise DataError(
                f"{root} holds .npy files that are not CIFAR-10-C corruptions: "
                f"{shown_names(unknown)}; "
                f"expected labels.npy and <corruption>.npy with corruptions among "
                f"{', '.join(ALL_CORRUPTIONS)}, so move the others out."
            )
        if not (root / LABELS_FILE).is_file():
            raise DataError(
                f"{root} lacks {LABELS_FILE}; the cifar10-c layout expects ROOT/labels.npy next "
                "to ROOT/<corruption>.npy, as in the CIFAR-10-C release."
            )
        labels = _labels(root)
        block = len(labels)
        targets = [int(v) for v in labels]
        paths = [root / f"{name}.npy" for name in ALL_CORRUPTIONS]
        arrays = {path: _images(path, block * len(SEVERITIES)) for path in paths if path.is_file()}
        members: dict[tuple[str, int], LabeledImages] = {
            (path.stem, severity): ArrayRows(
                root, path, (severity - 1) * block, targets, preprocessing, array
            )
            for path, array in arrays.items()
            for severity in SEVERITIES
        }
        if not members:
            raise DataError(
                f"{root} has no corruption files; expected ROOT/<corruption>.npy (e.g. "
                "gaussian_noise.npy) next to labels.npy."
            )
        super().__init__(kind=KIND, root=root, members=members)
