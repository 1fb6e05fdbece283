"""Datasets robench evaluates on: `open_dataset(path_or_name)` -> `LabeledImages`.

Images come out in pixel space, float (C, H, W) in [0, 1], never normalised. The layouts
(`LAYOUTS`: detected in table order, or chosen with `layout=`), the Long Range Arena's
sequence layouts among them, are in docs/datasets.md; a plugin adds one with `register_layout`.

May import: `robench._core` only (`robench.results`, the one part below it, too, should a
reader need a report record; none does today).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robench._core.errors import DataError
from robench._core.lazy import LazyEntry
from robench._core.plugins import call_plugin
from robench._core.registry import did_you_mean
from robench.data.builtin import BUILTIN_DATASETS, BuiltinDataset
from robench.data.cifar10_c import Cifar10C, looks_like_cifar10_c
from robench.data.class_map import ClassMap, read_class_map
from robench.data.corruption_family import CorruptionFamily
from robench.data.idx_dataset import IdxDataset, idx_files
from robench.data.image_folder import ImageFolderDataset, subfolders
from robench.data.imagenet_c import ImageNetC, looks_like_imagenet_c
from robench.data.imagenet_shift import (
    ImageNetSketchFolder,
    ImageNetV2Folder,
    ImageNetWnidFolder,
    LabelSpaceFolder,
    looks_like_imagenet_v2,
)
from robench.data.label_space import LabelSpace, read_label_space
from robench.data.label_space_view import restrict_to_label_space
from robench.data.labeled import LabeledImages
from robench.data.preprocessing import Preprocessing
from robench.data.subset import indices_sha256, select_indices

__all__ = [
    "BUILTIN_DATASETS",
    "LAYOUTS",
    "BuiltinDataset",
    "ClassMap",
    "CorruptionFamily",
    "LabelSpace",
    "LabeledImages",
    "Layout",
    "Preprocessing",
    "indices_sha256",
    "open_dataset",
    "read_class_map",
    "read_label_space",
    "register_layout",
    "restrict_to_label_space",
    "select_indices",
]

logger = logging.getLogger(__name__)


_Opener = Callable[[Path, Preprocessing, str, "ClassMap | None"], LabeledImages]


def _opener(layout: str, reader: Callable[..., Any], takes: tuple[str, ...] = ()) -> _Opener:
    """An opener calling `reader(root, preprocessing)` with the keywords it `takes` ("split",
    "class_map"); a class map it does not take is refused (the layout fixes its own class
    indices), a split it does not take ignored with a warning (the layout is one split)."""

    def opener(
        root: Path, preprocessing: Preprocessing, split: str, class_map: ClassMap | None
    ) -> LabeledImages:
        if class_map is not None and "class_map" not in takes:
            raise DataError(
                f"a class map ({class_map.path}) does not apply to the {layout} layout, which "
                "fixes its own class indices; leave --class-map out."
            )
        if split != "test" and "split" not in takes:
            logger.warning(
                "split %r is ignored: %s data in %s is a single split", split, layout, root
            )
        given = {"split": split, "class_map": class_map}
        return reader(root, preprocessing, **{key: given[key] for key in takes})

    return opener


@dataclass(frozen=True)
class Layout:
    """A directory layout robench reads."""

    # Reads ROOT as this layout.
    opener: _Opener
    # Does ROOT look like this layout? None: never detected, chosen by name only.
    detect: Callable[[Path], bool] | None
    # The layout's shape, for messages.
    shape: str


# Layouts by name; the ones with a detector are tried in this order.
LAYOUTS: dict[str, Layout] = {
    "idx": Layout(
        _opener("idx", IdxDataset, ("split", "class_map")),
        lambda root: bool(idx_files(root)),
        "t10k-images-idx3-ubyte[.gz] + t10k-labels-idx1-ubyte[.gz]",
    ),
    "cifar10-c": Layout(
        _opener("cifar10-c", Cifar10C),
        looks_like_cifar10_c,
        "ROOT/<corruption>.npy + ROOT/labels.npy",
    ),
    "imagenet-c": Layout(
        _opener("imagenet-c", ImageNetC),
        looks_like_imagenet_c,
        "ROOT/<corruption>/<severity>/<wnid>/<image>",
    ),
    "imagenet-v2": Layout(
        _opener("imagenet-v2", ImageNetV2Folder),
        looks_like_imagenet_v2,
        "ROOT/<0..999>/<image>",
    ),
    "image-folder": Layout(
        _opener("image-folder", ImageFolderDataset, ("class_map",)),
        lambda root: bool(subfolders(root)),
        "ROOT/<class>/<image>",
    ),
    "imagenet-a": Layout(
        _opener("imagenet-a", lambda r, p: LabelSpaceFolder(r, p, "imagenet-a")),
        None,
        "ROOT/<wnid>/<image> over the 200 ImageNet-A wnids",
    ),
    "imagenet-r": Layout(
        _opener("imagenet-r", lambda r, p: LabelSpaceFolder(r, p, "imagenet-r")),
        None,
        "ROOT/<wnid>/<image> over the 200 ImageNet-R wnids",
    ),
    "imagenet": Layout(
        _opener("imagenet", ImageNetWnidFolder),
        None,
        "ROOT/<wnid>/<image> (ImageNet-1k wnids)",
    ),
    "imagenet-sketch": Layout(
        _opener("imagenet-sketch", ImageNetSketchFolder),
        None,
        "ROOT/<wnid>/<image>",
    ),
}


# The catch-all detector (any folder of class folders): a plugin's detector is tried first.
_CATCH_ALL = "image-folder"


def register_layout(
    name: str,
    opener: _Opener | str,
    *,
    shape: str,
    detect: Callable[[Path], bool] | str | None = None,
) -> Layout:
    """Add a dataset layout `name`: `opener(root, preprocessing, split, class_map) ->
    LabeledImages`, `detect(root) -> bool` (None: chosen by name only), either one possibly a
    "module:function" path (docs/extending.md, "A dataset layout")."""
    if name in LAYOUTS:
        raise ValueError(f"data layout {name!r} is already registered")
    lazy_opener = _lazy(f"{name} opener", opener)
    layout = Layout(
        lazy_opener, None if detect is None else _lazy(f"{name} detector", detect), shape
    )
    entries = list(LAYOUTS.items())
    catch_all = (i for i, (n, _) in enumerate(entries) if n == _CATCH_ALL and detect is not None)
    entries.insert(next(catch_all, len(entries)), (name, layout))
    LAYOUTS.clear()
    LAYOUTS.update(entries)
    return layout


def _lazy(name: str, function: Callable[..., Any] | str) -> Callable[..., Any]:
    """`function`, or for a "module:function" path one that imports it on its first call."""
    if not isinstance(function, str):
        return function
    entry = LazyEntry(name, function)

    def call(*args: Any) -> Any:
        return entry.load()(*args)

    return call


def _not_text(path: str | Path) -> None:
    """A text corpus given to an image model: say so instead of failing on its layout."""
    from robench.data.text import BUILTIN_TEXT, looks_like_text_corpus

    if str(path) in BUILTIN_TEXT or (Path(path).is_dir() and looks_like_text_corpus(path)):
        raise DataError(
            f"{path} is a text corpus (language-modeling data), but the model is an image "
            "classifier; pass image data with --data, or evaluate a language model with a "
            "language-modeling suite (`robench list suites`)."
        )


def _resolve(path: str | Path) -> Path:
    """An existing path wins; otherwise a built-in name; otherwise a DataError."""
    candidate = Path(path)
    if candidate.exists():
        return candidate
    _not_text(path)
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
    layout: str | None = None,
) -> LabeledImages:
    """Open the dataset at `path` (a directory or a built-in name) with its layout detected,
    or read as `layout` (a key of LAYOUTS). `split` picks the IDX split ("test" or "train");
    `class_map` (a ClassMap or a class-map file) fixes an image folder's class indices or names
    IDX labels; the other layouts are one split and fix their own."""
    if layout is not None and layout not in LAYOUTS:
        raise DataError(did_you_mean(layout, list(LAYOUTS), "data layout"))
    root = _resolve(path)
    if not root.is_dir():
        raise DataError(
            f"data path {root} is a file; pass the directory that holds the IDX files or the "
            "class folders."
        )
    if class_map is not None and not isinstance(class_map, ClassMap):
        class_map = read_class_map(class_map)
    detected = (
        name
        for name, entry in LAYOUTS.items()
        if entry.detect is not None
        and call_plugin(f"data layout {name!r}'s detector", entry.detect, root)
    )
    layout = layout or next(detected, None)
    if layout is not None:
        opener = LAYOUTS[layout].opener
        return call_plugin(f"data layout {layout!r}", opener, root, preprocessing, split, class_map)
    _not_text(root)  # no image layout: say so if it is text
    shapes = "; ".join(f"{name}: {e.shape}" for name, e in LAYOUTS.items() if e.detect)
    raise DataError(
        f"{root} is neither an IDX directory (t10k-images-idx3-ubyte[.gz] and "
        "t10k-labels-idx1-ubyte[.gz]) nor an image folder (ROOT/<class>/<image>) nor another "
        f"layout robench detects ({shapes}); point --data at one of those layouts."
    )


def _register_lra_layouts() -> None:
    """The Long Range Arena's layouts (robench/data/lra): sequence data, whose opener returns
    a `SequenceDataset` for the sequence-classification task, not `LabeledImages`."""
    from robench.data.lra.layouts import LRA_TASKS, open_lra

    for task in LRA_TASKS.values():

        def read(root: Path, _: Preprocessing, split: str, name: str = task.layout) -> Any:
            return open_lra(root, name, split)  # tokens: no image preprocessing applies

        opener = _opener(task.layout, read, ("split",))
        register_layout(task.layout, opener, shape=task.shape, detect=task.detect)


_register_lra_layouts()
