"""Byte-level IMDb reviews (LRA's Text task) from the aclImdb folder that tfds' `imdb_reviews`
is built from (lra_benchmarks/text_classification/input_pipeline.py).

Layout, split and cutting rules: docs/datasets.md, "Long Range Arena".
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np

from robench._core.errors import DataError
from robench.data.lra.byte_tokens import BYTE_OFFSET, PAD_ID, VOCAB_SIZE, raw_bytes
from robench.data.lra.sequences import SequenceDataset, cut_note, fitted

logger = logging.getLogger(__name__)

CLASSES = ["neg", "pos"]
DEFAULT_LENGTH = 4000
_FOLDERS = {"train": "train", "val": "test", "test": "test"}


def _acl_root(root: Path) -> Path:
    return root / "aclImdb" if (root / "aclImdb").is_dir() else root


def looks_like_aclimdb(root: Path) -> bool:
    base = _acl_root(root)
    return any(
        (base / split / "pos").is_dir() and (base / split / "neg").is_dir()
        for split in ("train", "test")
    )


def _reviews(folder: Path) -> list[Path]:
    with os.scandir(folder) as entries:
        files = [
            Path(e.path)
            for e in entries
            if e.name.endswith(".txt") and not e.name.startswith(".") and e.is_file()
        ]
    return sorted(files, key=lambda p: p.name)


def open_imdb(
    root: Path, split: str, max_length: int | None, truncate: bool | None
) -> SequenceDataset:
    """One split of aclImdb as byte ids padded to `max_length` (default 4000, the paper's)."""
    base = _acl_root(root)
    split_dir = base / _FOLDERS[split]
    missing = [name for name in CLASSES if not (split_dir / name).is_dir()]
    if missing:
        raise DataError(
            f"{split_dir} has no {' or '.join(missing)} folder; expected the aclImdb layout, "
            "ROOT/train/{neg,pos}/*.txt and ROOT/test/{neg,pos}/*.txt."
        )
    if split == "val":
        logger.info("IMDb has no validation split: reading the test split, as LRA does")
    length = DEFAULT_LENGTH if max_length is None else max_length
    cut = truncate if truncate is not None else max_length is None
    sequences: list[np.ndarray] = []
    targets: list[int] = []
    files: list[str] = []
    cut_count = 0
    for label, name in enumerate(CLASSES):
        for path in _reviews(split_dir / name):
            raw = raw_bytes(path.read_bytes())
            cut_count += len(raw) > length
            sequences.append(fitted(raw, length, truncate=cut, where=str(path)))
            targets.append(label)
            files.append(path.relative_to(root).as_posix())
    if not sequences:
        raise DataError(f"{split_dir}/neg and /pos hold no .txt reviews; expected aclImdb.")
    note = cut_note(cut_count, len(sequences), "reviews", length)
    return SequenceDataset(
        root=root,
        task_name="text",
        split=split,
        sequences=sequences,
        targets=targets,
        classes=list(CLASSES),
        vocab_size=VOCAB_SIZE,
        max_length=length,
        pad_id=PAD_ID,
        offset=BYTE_OFFSET,
        class_index_note="tfds imdb_reviews' classes: 0 neg, 1 pos (the aclImdb folder names)",
        preprocessing_note=note,
        files=files,
    )
