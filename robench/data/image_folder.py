"""Image-folder datasets: `ROOT/<class>/<image>`, as torchvision's and timm's ImageFolder.

Class indices and which files are images: docs/datasets.md and the README.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from PIL import Image

from robench._core.errors import DataError, shown_names
from robench.data.class_map import ClassMap
from robench.data.labeled import LabeledImages
from robench.data.preprocessing import Preprocessing

if TYPE_CHECKING:
    from robench.data.label_space import LabelSpace

logger = logging.getLogger(__name__)

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"})

# Folder names that mean ROOT is the parent of the splits, not a split.
_SPLIT_FOLDER_NAMES = frozenset({"train", "val", "valid", "validation", "test"})

_NUMERIC = re.compile(r"[0-9]+")

# Errors PIL raises on a file it cannot decode.
IMAGE_ERRORS = (OSError, ValueError, SyntaxError, Image.DecompressionBombError)


def _images_in(folder: Path) -> list[Path]:
    # os.scandir reads the entry type from the directory listing: no stat per file, which
    # matters for ImageNet-C's 95 folders of 50,000 images.
    with os.scandir(folder) as entries:
        images = [
            Path(entry.path)
            for entry in entries
            if not entry.name.startswith(".")
            and os.path.splitext(entry.name)[1].lower() in IMAGE_EXTENSIONS
            and entry.is_file()
        ]
    return sorted(images, key=lambda p: p.name)


def subfolders(root: Path) -> list[Path]:
    """The non-hidden sub-folders of `root`, sorted."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def _indices_from_names(folder_names: list[str]) -> tuple[list[str], str]:
    """Classes in index order and the note saying how, for folders without a class map."""
    if not all(_NUMERIC.fullmatch(name) for name in folder_names):
        return sorted(folder_names), "class indices follow sorted folder names"
    classes = sorted(folder_names, key=lambda name: (int(name), name))
    if classes == [str(i) for i in range(len(classes))]:
        return classes, (
            f"class indices follow numeric folder names 0..{len(classes) - 1} "
            "(sorted numerically, folder n is class n)"
        )
    note = (
        f"class indices follow numerically sorted folder names, which are not 0..N-1: "
        f"folder {classes[0]!r} is class 0 and {classes[-1]!r} is class {len(classes) - 1}; "
        "pass --class-map if the folder names are the class indices"
    )
    logger.warning("%s", note)
    return classes, note


def _indices_from_map(root: Path, folder_names: list[str], class_map: ClassMap) -> list[str]:
    unknown = sorted(name for name in folder_names if name not in class_map.index)
    if unknown:
        raise DataError(
            f"{root} has class folders that are not in class map {class_map.path}: "
            f"{shown_names(unknown)}; add them to the class map or remove them from {root}."
        )
    return list(class_map.names)


class UnreadableImageError(DataError):
    """An image file that cannot be decoded; `reason` says which and why, without the fix.
    (Built from one message, as torch re-raises a DataLoader worker's error.)"""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


def load_image(path: Path, preprocessing: Preprocessing) -> torch.Tensor:
    """Decode the image file at `path` and preprocess it; DataError naming the file on failure."""
    with _reading(path), Image.open(path) as image:
        return preprocessing(image)
    raise AssertionError("unreachable")  # _reading re-raises every error


def load_images(paths: Sequence[Path], preprocessing: Preprocessing) -> list[torch.Tensor]:
    """`load_image` of each path, equal to the last bit; images of one size are resized
    together where the preprocessing can (`Preprocessing.many`)."""
    if len(paths) < 2 or not preprocessing.batches_resize:
        return [load_image(path, preprocessing) for path in paths]
    arrays = []
    for path in paths:
        with _reading(path), Image.open(path) as image:
            arrays.append(preprocessing.pixels(image))
    try:
        return preprocessing.many(arrays)
    except DataError:  # one image cannot be preprocessed: the per-image path names its file
        return [load_image(path, preprocessing) for path in paths]


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Re-raise a decoding or preprocessing error as a DataError naming `path`."""
    try:
        yield
    except IMAGE_ERRORS as exc:
        reason = f"cannot decode image {path} ({exc})"
        raise UnreadableImageError(
            f"{reason}; replace the file, remove it from the dataset, or pass --bad-images "
            "skip to leave unreadable images out of the run.",
            reason,
        ) from None
    except DataError as exc:
        raise DataError(f"image {path}: {exc}") from None


def class_folders(root: Path) -> dict[str, Path]:
    """The non-hidden sub-folders of `root` by name; DataError when `root` is not a directory."""
    if not root.is_dir():
        raise DataError(f"image folder {root} does not exist; pass a directory ROOT/<class>/.")
    return {p.name: p for p in subfolders(root)}


class FolderImages(LabeledImages):
    """Images under `ROOT/<folder>/`, each labelled by its folder through `labels`.

    The shared machinery of the folder layouts (image-folder, ImageNet-A/R/V2/Sketch, each
    ImageNet-C member): items are ordered by label, then folder name, then file name.
    """

    kind = "image-folder"

    def __init__(
        self,
        root: Path,
        preprocessing: Preprocessing,
        *,
        folders: dict[str, Path],
        labels: dict[str, int],
        classes: list[str],
        class_index_note: str,
        output_classes: tuple[int, ...] | None = None,
        label_space: LabelSpace | None = None,
        preprocessing_note: str | None = None,
    ) -> None:
        self.samples: list[tuple[Path, int]] = []
        empty: list[str] = []
        for name in sorted(labels, key=lambda n: (labels[n], n)):
            images = _images_in(folders[name])
            if not images:
                empty.append(name)
            self.samples.extend((path, labels[name]) for path in images)
        if not self.samples:
            raise DataError(self._no_images_message(root, folders))
        if empty:
            logger.warning(
                "%d class folder(s) of %s hold no images: %s", len(empty), root, shown_names(empty)
            )
        if _images_in(root):
            logger.warning("images directly inside %s are ignored; only class folders count", root)
        super().__init__(
            root=root,
            classes=classes,
            class_index_note=class_index_note,
            targets=[label for _, label in self.samples],
            preprocessing=preprocessing,
            output_classes=output_classes,
            label_space=label_space,
            preprocessing_note=preprocessing_note,
        )

    def relative_paths(self) -> list[str]:
        """Each item's path relative to ROOT, `<class>/<file>` with `/`, in dataset order: the
        names a subset file (`robench.data.subset.resolve_subset`) is matched against."""
        return [path.relative_to(self.root).as_posix() for path, _ in self.samples]

    @staticmethod
    def _no_images_message(root: Path, folders: dict[str, Path]) -> str:
        extensions = " ".join(sorted(IMAGE_EXTENSIONS))
        nested = sorted(name for name, folder in folders.items() if any(subfolders(folder)))
        hint = (
            f"; its folders hold subfolders instead (e.g. {root / nested[0]}): point --data at "
            "the level whose subfolders hold the images"
            if nested
            else ""
        )
        return (
            f"image folder {root} has no images in its class folders{hint}; expected files "
            f"{root}/<class>/<image> with an extension among {extensions}."
        )

    def _load_image(self, index: int) -> torch.Tensor:
        return load_image(self.samples[index][0], self.preprocessing)

    def _load_images(self, indices: Sequence[int]) -> list[torch.Tensor]:
        return load_images([self.samples[i][0] for i in indices], self.preprocessing)


class ImageFolderDataset(FolderImages):
    """Images under `ROOT/<class>/`, labelled by their folder (sorted names or a class map)."""

    def __init__(
        self, root: str | Path, preprocessing: Preprocessing, class_map: ClassMap | None = None
    ) -> None:
        root = Path(root)
        folders = class_folders(root)
        if not folders:
            loose = "it holds images but no class folders" if _images_in(root) else "it is empty"
            raise DataError(
                f"image folder {root} has no class folders ({loose}); put images in "
                f"{root}/<class>/<image> with one folder per class."
            )
        if class_map is None and set(folders) <= _SPLIT_FOLDER_NAMES:
            raise DataError(
                f"{root} holds split folders ({shown_names(sorted(folders))}) rather than class "
                f"folders; point --data at one split, e.g. {root / sorted(folders)[0]}."
            )
        if class_map is None:
            classes, note = _indices_from_names(list(folders))
        else:
            classes = _indices_from_map(root, list(folders), class_map)
            note = f"class indices follow class map {class_map.path}"
        super().__init__(
            root,
            preprocessing,
            folders=folders,
            labels={name: i for i, name in enumerate(classes) if name in folders},
            classes=classes,
            class_index_note=note,
        )
