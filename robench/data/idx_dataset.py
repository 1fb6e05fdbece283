"""IDX datasets: a directory of MNIST-style files (MNIST, Fashion-MNIST, KMNIST, EMNIST), a
split being an images/labels pair of files; the names accepted: docs/datasets.md, `idx`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

from robench._core.errors import DataError
from robench.data.class_map import ClassMap
from robench.data.idx import read_idx
from robench.data.labeled import LabeledImages
from robench.data.preprocessing import Preprocessing

SPLIT_PREFIXES: dict[str, tuple[str, ...]] = {"test": ("t10k", "test"), "train": ("train",)}

FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)

_IDX_NAME = re.compile(
    r"(?P<lead>.*?)(?P<prefix>t10k|test|train)-(?P<part>images|labels)[-.]"
    r"(?P<idx>idx[13])-ubyte(?P<gz>\.gz)?",
    re.IGNORECASE,
)

# part -> the IDX rank its file name must carry.
_PART_IDX = {"images": "idx3", "labels": "idx1"}


def idx_files(root: Path) -> dict[tuple[str, str], list[Path]]:
    """IDX files in `root` by (split, part), part being "images" or "labels"."""
    found: dict[tuple[str, str], list[Path]] = {}
    split_of = {prefix: split for split, prefixes in SPLIT_PREFIXES.items() for prefix in prefixes}
    for path in sorted(root.iterdir()):
        match = _IDX_NAME.fullmatch(path.name)
        if not match or not path.is_file():
            continue
        part = match["part"].lower()
        if _PART_IDX[part] != match["idx"].lower():
            continue
        found.setdefault((split_of[match["prefix"].lower()], part), []).append(path)
    return found


def _pick(root: Path, split: str, part: str, candidates: list[Path]) -> Path:
    """One file for (split, part); an uncompressed copy is preferred over its .gz twin."""
    if len({path.name.removesuffix(".gz").lower() for path in candidates}) > 1:
        names = ", ".join(p.name for p in candidates)
        raise DataError(
            f"{root} holds several {split} {part} files ({names}); keep one dataset per "
            "directory and point --data at it."
        )
    return min(candidates, key=lambda p: p.suffix == ".gz")


class IdxDataset(LabeledImages):
    """One split of an IDX directory; images are uint8 (N, H, W) held in memory."""

    kind = "idx"
    native_channels = 1  # IDX images are single-channel (MNIST, Fashion-MNIST)

    def __init__(
        self,
        root: str | Path,
        preprocessing: Preprocessing,
        split: str = "test",
        class_map: ClassMap | None = None,
    ) -> None:
        root = Path(root)
        if split not in SPLIT_PREFIXES:
            raise DataError(
                f"split {split!r} is not an IDX split; use one of {', '.join(SPLIT_PREFIXES)}."
            )
        if not root.is_dir():
            raise DataError(f"IDX directory {root} does not exist; pass the folder of the files.")
        found = idx_files(root)
        missing = [part for part in _PART_IDX if (split, part) not in found]
        if missing:
            expected = " and ".join(
                f"{SPLIT_PREFIXES[split][0]}-{part}-{idx}-ubyte[.gz]"
                for part, idx in _PART_IDX.items()
            )
            raise DataError(
                f"{root} lacks the {split} split's {' and '.join(missing)} file; expected "
                f"{expected} (or the t10k-images.idx3-ubyte spelling), put them in {root}."
            )
        images_path = _pick(root, split, "images", found[(split, "images")])
        labels_path = _pick(root, split, "labels", found[(split, "labels")])
        images, labels = read_idx(images_path), read_idx(labels_path)
        if images.ndim != 3 or images.dtype != np.uint8:
            raise DataError(
                f"{images_path} holds {images.dtype} data of shape {images.shape}; expected "
                "uint8 images (N, H, W), check that it is an images file."
            )
        if labels.ndim != 1 or len(labels) != len(images):
            raise DataError(
                f"{labels_path} holds labels of shape {labels.shape} for {len(images)} images in "
                f"{images_path.name}; expected ({len(images)},), the two files do not belong "
                "together."
            )
        self.images = images
        self.images_path, self.labels_path = images_path, labels_path
        targets = [int(v) for v in labels]
        num_classes = max(targets, default=-1) + 1
        classes, note = _class_names(root, num_classes, class_map)
        super().__init__(
            root=root,
            split=split,
            classes=classes,
            class_index_note=note,
            targets=targets,
            preprocessing=preprocessing,
        )

    def _load_image(self, index: int) -> torch.Tensor:
        return self.preprocessing(self.images[index])


def _class_names(root: Path, num_classes: int, class_map: ClassMap | None) -> tuple[list[str], str]:
    note = "class indices are the labels stored in the IDX file"
    if class_map is not None:
        if len(class_map) < num_classes:
            raise DataError(
                f"class map {class_map.path} names {len(class_map)} classes but {root} has "
                f"labels up to {num_classes - 1}; list one name per label."
            )
        return list(class_map.names), f"{note}; names from class map {class_map.path}"
    looks_fashion = any("fashion" in part.lower() for part in root.resolve().parts)
    if looks_fashion and num_classes <= len(FASHION_MNIST_CLASSES):
        return list(FASHION_MNIST_CLASSES), f"{note} (Fashion-MNIST class names)"
    return [str(i) for i in range(num_classes)], note
