"""Segmentation folder layouts (ADE20K, Cityscapes, Pascal VOC 2012, a generic paired folder),
one row of `LAYOUTS` each, and `open_segmentation_dataset`, which recognises them; the folders
and label conventions (mmsegmentation's): docs/segmentation-data.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robench._core.errors import DataError, shown_names
from robench.data.image_folder import IMAGE_EXTENSIONS
from robench.data.segmentation.label_maps import IGNORE_INDEX
from robench.data.segmentation.paired_files import (
    PairedSegmentation,
    identity_lookup,
    read_image,
    reduce_zero_label_lookup,
)

CITYSCAPES_CLASSES = (
    "road", "sidewalk", "building", "wall", "fence", "pole", "traffic light", "traffic sign",
    "vegetation", "terrain", "sky", "person", "rider", "car", "truck", "bus", "train",
    "motorcycle", "bicycle",
)  # fmt: skip
VOC_CLASSES = (
    "background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat",
    "chair", "cow", "diningtable", "dog", "horse", "motorbike", "person", "pottedplant",
    "sheep", "sofa", "train", "tvmonitor",
)  # fmt: skip


def ade20k_classes() -> list[str]:
    """ADE20K's 150 class names (mmsegmentation's ADE20KDataset order)."""
    text = (Path(__file__).parent / "ade20k_classes.txt").read_text()
    return [line for line in text.splitlines() if line]


# What a layout's `build` gives: the (image, mask) pairs, the classes and the mask lookup.
_Built = tuple[list[tuple[Path, Path]], list[str], np.ndarray]


@dataclass(frozen=True)
class Layout:
    """One folder layout."""

    detect: Callable[[Path], Path | None]  # the dataset folder under a path, or None
    default_split: str | None
    splits: dict[str, str]  # split names accepted -> the folder/list name on disk
    build: Callable[[Path, str | None], _Built]


def _first_with(path: Path, names: tuple[str, ...], parents: tuple[str, ...]) -> Path | None:
    """`path` or `path/<parent>` if it holds every one of `names`."""
    for candidate in (path, *(path / p for p in parents)):
        if all((candidate / name).is_dir() for name in names):
            return candidate
    return None


def _files(folder: Path, suffix: str = "") -> list[Path]:
    if not folder.is_dir():
        raise DataError(f"{folder} does not exist; expected the split's folder there.")
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and not p.name.startswith(".")
        and p.suffix.lower() in IMAGE_EXTENSIONS
        and p.name.endswith(suffix)
    )


def _pair_by_stem(
    folders: tuple[Path, Path],
    images: list[Path],
    masks: list[Path],
    image_suffix: str = "",
    mask_suffix: str = "",
) -> list[tuple[Path, Path]]:
    """Images and masks matched by name (without extension and the given suffixes);
    `folders` (images, masks) are where they were found, for messages."""

    def key(path: Path, suffix: str) -> str:
        stem = path.stem
        return stem[: len(stem) - len(suffix)] if suffix and stem.endswith(suffix) else stem

    by_image = {key(p, image_suffix): p for p in images}
    by_mask = {key(p, mask_suffix): p for p in masks}
    image_dir, mask_dir = folders
    if not by_image and not by_mask:
        raise DataError(
            f"{image_dir} and {mask_dir} hold no image files; add the images and their masks "
            "(of the same names) there, or pass another folder."
        )
    lonely_masks = sorted(set(by_mask) - set(by_image))
    if lonely_masks:
        raise DataError(
            f"masks in {mask_dir} without an image in {image_dir}: {shown_names(lonely_masks)}; "
            "every mask needs an image of the same name, so add the images or remove those "
            "masks."
        )
    lonely_images = sorted(set(by_image) - set(by_mask))
    if lonely_images:
        raise DataError(
            f"images in {image_dir} without a mask in {mask_dir}: {shown_names(lonely_images)}; "
            "every image needs a mask of the same name, so add the masks or remove those images."
        )
    return [(by_image[k], by_mask[k]) for k in sorted(by_image)]


def _ade20k(root: Path, split: str | None) -> _Built:
    folders = (root / "images" / str(split), root / "annotations" / str(split))
    images, masks = _files(folders[0]), _files(folders[1])
    images = [p for p in images if p.suffix.lower() == ".jpg"] or images
    return _pair_by_stem(folders, images, masks), ade20k_classes(), reduce_zero_label_lookup()


def _cityscapes(root: Path, split: str | None) -> _Built:
    folders = (root / "leftImg8bit" / str(split), root / "gtFine" / str(split))
    images = _files(folders[0], "_leftImg8bit.png")
    masks = _files(folders[1], "_gtFine_labelTrainIds.png")
    pairs = _pair_by_stem(folders, images, masks, "_leftImg8bit", "_gtFine_labelTrainIds")
    return pairs, list(CITYSCAPES_CLASSES), identity_lookup()


def _voc(root: Path, split: str | None) -> _Built:
    listing = root / "ImageSets" / "Segmentation" / f"{split}.txt"
    if not listing.is_file():
        raise DataError(
            f"{listing} does not exist; Pascal VOC lists each split's images there, so "
            "restore the file (the split's image names, one per line)."
        )
    pairs = []
    for name in listing.read_text().split():
        image = root / "JPEGImages" / f"{name}.jpg"
        mask = root / "SegmentationClass" / f"{name}.png"
        for path, what in ((image, "image"), (mask, "mask")):
            if not path.is_file():
                raise DataError(
                    f"{listing} names {name!r} but its {what} {path} is missing; add the file "
                    f"or remove {name!r} from the list."
                )
        pairs.append((image, mask))
    return pairs, list(VOC_CLASSES), identity_lookup()


def _folder(root: Path, split: str | None) -> _Built:
    folders = (root / "images", root / "masks")
    pairs = _pair_by_stem(folders, _files(folders[0]), _files(folders[1]))
    names_file = root / "classes.txt"
    if names_file.is_file():
        try:
            lines = names_file.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError:
            raise DataError(
                f"{names_file} is not UTF-8 text; save the class names as UTF-8, one per line."
            ) from None
        classes = [line.strip() for line in lines if line.strip()]
        if not classes:
            raise DataError(
                f"{names_file} lists no class names; write one per line, or remove the file to "
                "number the classes by the masks' values."
            )
    else:
        classes = [str(i) for i in range(_largest_label(pairs) + 1)]
    return pairs, classes, identity_lookup()


def _largest_label(pairs: list[tuple[Path, Path]]) -> int:
    """The largest mask value other than the ignore index, over every mask (no classes.txt)."""
    largest = 0
    for _, mask_path in pairs:
        values = np.array(read_image(mask_path, "mask"))
        values = values[values != IGNORE_INDEX]
        largest = max(largest, int(values.max()) if values.size else 0)
    return largest


class NoSplits(DataError):
    """A split was asked of a layout that has none (the images/ + masks/ folder)."""


LAYOUTS: dict[str, Layout] = {
    "ade20k": Layout(
        detect=lambda p: _first_with(p, ("images", "annotations"), ("ADEChallengeData2016",)),
        default_split="validation",
        splits={
            "training": "training",
            "train": "training",
            "validation": "validation",
            "val": "validation",
        },
        build=_ade20k,
    ),
    "cityscapes": Layout(
        detect=lambda p: _first_with(p, ("leftImg8bit", "gtFine"), ("cityscapes",)),
        default_split="val",
        splits={"train": "train", "val": "val", "test": "test"},
        build=_cityscapes,
    ),
    "voc2012": Layout(
        detect=lambda p: _first_with(
            p, ("JPEGImages", "SegmentationClass"), ("VOC2012", "VOCdevkit/VOC2012")
        ),
        default_split="val",
        splits={"train": "train", "val": "val", "trainval": "trainval"},
        build=_voc,
    ),
    "folder": Layout(
        detect=lambda p: _first_with(p, ("images", "masks"), ()),
        default_split=None,
        splits={},
        build=_folder,
    ),
}


def open_segmentation_dataset(
    path: str | Path,
    layout: str | None = None,
    split: str | None = None,
    image_size: tuple[int, int] | None = None,
) -> PairedSegmentation:
    """The segmentation dataset at `path`: its layout recognised (or named), its split
    (the layout's default if None) with images resized to `image_size` (height, width)."""
    path = Path(path)
    if layout is not None and layout not in LAYOUTS:
        raise DataError(
            f"unknown segmentation layout {layout!r}; expected one of {shown_names(list(LAYOUTS))}."
        )
    names = [layout] if layout is not None else list(LAYOUTS)
    for name in names:
        root = LAYOUTS[name].detect(path)
        if root is not None:
            return _open_layout(name, root, split, image_size)
    expected = "its folders" if layout is not None else "the folders of any known layout"
    raise DataError(
        f"{path} does not hold {expected} ({shown_names(names)}); see docs/segmentation-data.md "
        "for each layout's folders, or arrange the data as images/ and masks/."
    )


def _open_layout(
    name: str, root: Path, split: str | None, image_size: tuple[int, int] | None
) -> PairedSegmentation:
    spec = LAYOUTS[name]
    if not spec.splits and split is not None:
        raise NoSplits(
            f"{root} ({name} layout: images/ and masks/) has no splits, so --split {split} "
            "cannot be chosen; leave --split out to use all its pairs, or arrange the data as "
            "one folder per split and pass that folder."
        )
    chosen = split if split is not None else spec.default_split
    if spec.splits and chosen not in spec.splits:
        raise DataError(
            f"{root} ({name} layout) has no split {chosen!r}; pass --split as one of "
            f"{shown_names(list(spec.splits))}."
        )
    on_disk = spec.splits[chosen] if spec.splits and chosen is not None else None
    pairs, classes, lookup = spec.build(root, on_disk)
    return PairedSegmentation(root, name, on_disk, pairs, classes, image_size, lookup)
