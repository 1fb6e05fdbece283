"""A dataset layout from a plugin: `csv-labels`, a folder of images listed in `labels.csv`.

    ROOT/labels.csv      file,label      (a header, then one image per row)
                         img/0001.png,sneaker
    ROOT/classes.txt     optional: one class name per line, in the model's output order
                         (without it, the sorted labels)

    robench eval vit_nano_fmnist --data my-folder --import examples/plugins/csv_dataset.py

A folder with a `labels.csv` is detected as this layout before robench's catch-all image
folder; a suite may also name it (`[datasets.NAME] layout = "csv-labels"`). The reader and
the detector may be functions or "module:function" paths, imported when a folder is first
opened; this one-file example passes the functions.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from robench._core.errors import DataError
from robench.data.image_folder import load_image, load_images
from robench.registry import LabeledImages, register_dataset

LABELS = "labels.csv"
CLASSES = "classes.txt"


class CsvLabels(LabeledImages):
    """The images `labels.csv` lists, labelled by their position in the class list."""

    kind = "csv-labels"

    def __init__(self, root: Path, preprocessing: Any) -> None:
        with (root / LABELS).open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        if not rows or set(rows[0]) != {"file", "label"}:
            raise DataError(f"{root / LABELS} needs a header `file,label` and a row per image.")
        listed = root / CLASSES
        labels = {row["label"] for row in rows}
        classes = listed.read_text("utf-8").splitlines() if listed.is_file() else sorted(labels)
        if labels - set(classes):
            raise DataError(f"{listed} does not list labels {sorted(labels - set(classes))}.")
        self.files = [root / row["file"] for row in rows]
        super().__init__(
            root=root,
            split=None,
            classes=classes,
            class_index_note=f"class indices follow {CLASSES if listed.is_file() else 'labels'}",
            targets=[classes.index(row["label"]) for row in rows],
            preprocessing=preprocessing,
        )

    def _load_image(self, index: int) -> torch.Tensor:
        return load_image(self.files[index], self.preprocessing)

    def _load_images(self, indices: Sequence[int]) -> list[torch.Tensor]:
        return load_images([self.files[i] for i in indices], self.preprocessing)


def open_csv_labels(root: Path, preprocessing: Any, split: str, class_map: Any) -> CsvLabels:
    """The layout's reader: `(root, preprocessing, split, class_map) -> LabeledImages`."""
    if class_map is not None:
        raise DataError("csv-labels data fixes its class indices (classes.txt); drop --class-map.")
    return CsvLabels(root, preprocessing)


register_dataset(
    "csv-labels",
    open_csv_labels,
    detect=lambda root: (root / LABELS).is_file(),
    shape=f"ROOT/{LABELS} (file,label rows) + the images it lists",
)
