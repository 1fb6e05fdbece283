"""Grey-scale CIFAR-10 as pixel sequences (LRA's Image task,
lra_benchmarks/image/input_pipeline.py), from the binary version or an image folder.

Grey levels, splits, and why the python version is refused: docs/datasets.md, "Long Range
Arena".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from robench._core.errors import DataError
from robench.data.cifar10_c import CIFAR10_CLASSES
from robench.data.image_folder import IMAGE_ERRORS, _images_in
from robench.data.lra.sequences import SequenceDataset

SIDE = 32
LENGTH = SIDE * SIDE
TRAIN_FILES = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
TEST_FILE = "test_batch.bin"
_RECORD = 1 + 3 * LENGTH  # a label byte, then 1024 red, 1024 green, 1024 blue (row-major)
# tf.image.rgb_to_grayscale's weights (ITU-R BT.601 luma, as TensorFlow rounds them).
RGB_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], dtype=np.float32)


def grey_levels(rgb: np.ndarray) -> np.ndarray:
    """uint8 (..., 3) RGB -> uint8 (...) grey, as tf.image.rgb_to_grayscale computes it."""
    scaled = rgb.astype(np.float32) * np.float32(1.0 / 255)
    grey = scaled @ RGB_WEIGHTS
    return (grey * np.float32(255.5)).astype(np.uint8)  # a cast truncates, as tf.cast does


def _binary_root(root: Path) -> Path | None:
    for base in (root, root / "cifar-10-batches-bin"):
        if (base / TEST_FILE).is_file() or (base / TRAIN_FILES[0]).is_file():
            return base
    return None


def looks_like_cifar10_binary(root: Path) -> bool:
    return _binary_root(root) is not None


def _read_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    if not path.is_file():
        raise DataError(
            f"{path} is missing; expected CIFAR-10's binary version (data_batch_1.bin .. "
            "data_batch_5.bin and test_batch.bin)."
        )
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0 or raw.size % _RECORD:
        raise DataError(
            f"{path} holds {raw.size} bytes, not a whole number of {_RECORD}-byte records; "
            "expected a CIFAR-10 binary batch (replace the file with the release's)."
        )
    records = raw.reshape(-1, _RECORD)
    labels = records[:, 0]
    if int(labels.max()) >= len(CIFAR10_CLASSES):
        raise DataError(
            f"{path} has label {int(labels.max())}; CIFAR-10's labels are 0-9 (is it the "
            "CIFAR-100 binary version?)."
        )
    rgb = records[:, 1:].reshape(-1, 3, LENGTH).transpose(0, 2, 1)  # (N, 1024, 3)
    return grey_levels(rgb), labels.astype(np.int64)


def _binary_split(base: Path, split: str) -> tuple[np.ndarray, list[int]]:
    if split == "test":
        pixels, labels = _read_batch(base / TEST_FILE)
        return pixels, labels.tolist()
    batches = [_read_batch(base / name) for name in TRAIN_FILES]
    pixels = np.concatenate([p for p, _ in batches])
    labels = np.concatenate([lab for _, lab in batches])
    train = len(labels) - len(labels) // 10
    chosen = slice(0, train) if split == "train" else slice(train, None)
    return pixels[chosen], labels[chosen].tolist()


def _refuse_python_version(root: Path) -> None:
    if (root / "data_batch_1").is_file() or (root / "cifar-10-batches-py").is_dir():
        raise DataError(
            f"{root} holds CIFAR-10's python version, whose batches are pickles, which robench "
            "never unpickles; download the binary version (cifar-10-binary.tar.gz: "
            "data_batch_1.bin .. data_batch_5.bin, test_batch.bin) instead."
        )


def _grey_image(path: Path) -> np.ndarray:
    try:
        with Image.open(path) as image:
            image.load()
            array = np.asarray(image if image.mode == "L" else image.convert("RGB"))
    except IMAGE_ERRORS as exc:
        raise DataError(f"cannot decode image {path} ({exc}); replace or remove it.") from None
    if array.shape[:2] != (SIDE, SIDE):
        raise DataError(
            f"{path} is {array.shape[1]}x{array.shape[0]}; grey-scale CIFAR-10 images are "
            f"{SIDE}x{SIDE} (LRA's Image task reads 1024 pixels)."
        )
    return array.reshape(-1) if array.ndim == 2 else grey_levels(array).reshape(-1)


def _folder_split(root: Path, split: str) -> tuple[np.ndarray, list[int], list[str], list[str]]:
    split_dir = root / ("test" if split == "test" else "train")
    if not split_dir.is_dir():
        raise DataError(
            f"{root} has no {split_dir.name} folder; expected CIFAR-10's binary version "
            "(data_batch_1.bin .. data_batch_5.bin, test_batch.bin) or an image folder "
            "ROOT/train/<class>/<image> and ROOT/test/<class>/<image>."
        )
    classes = sorted(p.name for p in split_dir.iterdir() if p.is_dir() and p.name[0] != ".")
    chosen: list[tuple[Path, int]] = []
    for label, name in enumerate(classes):
        for position, path in enumerate(_images_in(split_dir / name)):
            held_out = position % 10 == 9
            if split == "test" or held_out == (split == "val"):
                chosen.append((path, label))
    if not chosen:
        raise DataError(f"{split_dir} holds no images in class folders; expected CIFAR-10.")
    pixels = np.stack([_grey_image(path) for path, _ in chosen])
    files = [path.relative_to(root).as_posix() for path, _ in chosen]
    return pixels, [label for _, label in chosen], classes, files


def open_cifar10_grey(
    root: Path, split: str, max_length: int | None, truncate: bool | None
) -> SequenceDataset:
    """CIFAR-10 (binary batches, else an image folder) as 1024 grey levels per image."""
    if max_length is not None and max_length != LENGTH:
        raise DataError(
            f"max_length {max_length} does not fit grey-scale CIFAR-10, whose sequences are "
            f"{SIDE}x{SIDE} = {LENGTH} pixels; leave max_length out."
        )
    base = _binary_root(root)
    if base is not None:
        pixels, targets = _binary_split(base, split)
        classes, note = list(CIFAR10_CLASSES), "CIFAR-10's class order (binary batches)"
        files = None
    else:
        _refuse_python_version(root)
        pixels, targets, classes, files = _folder_split(root, split)
        note = "class folders in sorted order (CIFAR-10's names sort into its class order)"
    return SequenceDataset(
        root=root,
        task_name="image",
        split=split,
        sequences=pixels,
        targets=targets,
        classes=classes,
        vocab_size=256,
        max_length=LENGTH,
        pad_id=None,
        class_index_note=note,
        preprocessing_note=(
            "RGB converted to grey as tf.image.rgb_to_grayscale does (LRA): "
            "0.2989 R + 0.5870 G + 0.1140 B, truncated to 0..255"
        ),
        files=files,
    )
