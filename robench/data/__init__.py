"""Datasets robench evaluates on: `open_dataset(path_or_name)` -> `LabeledImages`.

Images come out in pixel space, float (C, H, W) in [0, 1], never normalised. The layout is
detected: a directory of IDX files (MNIST-style) or an image folder `ROOT/<class>/<image>`.
Built-in names (`fashion-mnist`) resolve to data installed on the machine.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from robench._core.errors import DataError
from robench.data.class_map import ClassMap, read_class_map
from robench.data.idx_dataset import IdxDataset, idx_files
from robench.data.image_folder import ImageFolderDataset
from robench.data.labeled import LabeledImages
from robench.data.preprocessing import Preprocessing
from robench.data.subset import indices_sha256, select_indices

__all__ = [
    "BUILTIN_DATASETS",
    "ClassMap",
    "LabeledImages",
    "Preprocessing",
    "indices_sha256",
    "open_dataset",
    "read_class_map",
    "select_indices",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuiltinDataset:
    """A dataset robench knows by name."""

    # Where the Debian package installs the data.
    default_path: Path
    # Environment variable that points robench at another copy (e.g. a non-Debian machine).
    env_var: str
    # How to install it when it is missing (the end of an error message).
    install_hint: str

    @property
    def path(self) -> Path:
        """The environment variable's directory when set, else the default location."""
        return Path(os.environ.get(self.env_var) or self.default_path)


BUILTIN_DATASETS: dict[str, BuiltinDataset] = {
    "fashion-mnist": BuiltinDataset(
        default_path=Path("/usr/share/datasets/fashion-mnist"),
        env_var="ROBENCH_FASHION_MNIST_DIR",
        install_hint="run `make data` or `apt-get install dataset-fashion-mnist`, or set "
        "ROBENCH_FASHION_MNIST_DIR to a directory of its IDX files",
    ),
}

_Opener = Callable[[Path, Preprocessing, str, "ClassMap | None"], LabeledImages]


def _open_idx(
    root: Path, preprocessing: Preprocessing, split: str, class_map: ClassMap | None
) -> LabeledImages:
    return IdxDataset(root, preprocessing, split=split, class_map=class_map)


def _open_image_folder(
    root: Path, preprocessing: Preprocessing, split: str, class_map: ClassMap | None
) -> LabeledImages:
    if split != "test":
        logger.warning("split %r is ignored: image folder %s is a single split", split, root)
    return ImageFolderDataset(root, preprocessing, class_map=class_map)


def _has_class_folders(root: Path) -> bool:
    return any(p.is_dir() and not p.name.startswith(".") for p in root.iterdir())


# Layouts in detection order: name -> (does ROOT look like it?, opener).
_LAYOUTS: dict[str, tuple[Callable[[Path], bool], _Opener]] = {
    "idx": (lambda root: bool(idx_files(root)), _open_idx),
    "image-folder": (_has_class_folders, _open_image_folder),
}


def _resolve(path: str | Path) -> Path:
    """An existing path wins; otherwise a built-in name; otherwise a DataError."""
    candidate = Path(path)
    if candidate.exists():
        return candidate
    builtin = BUILTIN_DATASETS.get(str(path))
    if builtin is not None:
        if not builtin.path.is_dir():
            raise DataError(
                f"built-in dataset {str(path)!r} is not installed (looked in {builtin.path}); "
                f"{builtin.install_hint}."
            )
        return builtin.path
    close = difflib.get_close_matches(str(path), list(BUILTIN_DATASETS), n=1, cutoff=0.6)
    hint = f" Did you mean the built-in {close[0]!r}?" if close else ""
    raise DataError(
        f"data path {str(path)!r} does not exist; pass a directory of IDX files or of class "
        f"folders (ROOT/<class>/<image>), or a built-in name ({', '.join(BUILTIN_DATASETS)}).{hint}"
    )


def open_dataset(
    path: str | Path,
    *,
    preprocessing: Preprocessing,
    split: str = "test",
    class_map: ClassMap | str | Path | None = None,
) -> LabeledImages:
    """Open the dataset at `path` (a directory or a built-in name) with its layout detected.

    `split` picks the IDX split ("test" or "train"); an image folder is a single split.
    `class_map` (a ClassMap or the path of a class-map file) fixes class indices of an image
    folder, or names the labels of IDX data.
    """
    root = _resolve(path)
    if not root.is_dir():
        raise DataError(
            f"data path {root} is a file; pass the directory that holds the IDX files or the "
            "class folders."
        )
    if class_map is not None and not isinstance(class_map, ClassMap):
        class_map = read_class_map(class_map)
    for detect, opener in _LAYOUTS.values():
        if detect(root):
            return opener(root, preprocessing, split, class_map)
    raise DataError(
        f"{root} is neither an IDX directory (t10k-images-idx3-ubyte[.gz] and "
        "t10k-labels-idx1-ubyte[.gz]) nor an image folder (ROOT/<class>/<image>); point --data "
        "at one of those layouts."
    )
