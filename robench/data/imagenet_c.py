"""ImageNet-C (Hendrycks & Dietterich, 2019): `ROOT/<corruption>/<severity>/<wnid>/<image>`.

Corruptions at the top or under `ROOT/extra/`, labels, and the crop without resize that
Hendrycks' test script does: docs/datasets.md, "The layouts".
"""

from __future__ import annotations

from pathlib import Path

from robench._core.errors import DataError, shown_names
from robench.data.corruption_family import ALL_CORRUPTIONS, SEVERITIES, CorruptionFamily
from robench.data.image_folder import _NUMERIC, FolderImages, _indices_from_names, class_folders
from robench.data.image_folder import subfolders as _subfolders
from robench.data.imagenet_classes import WNID, imagenet_1k_labels, imagenet_1k_wnids
from robench.data.labeled import LabeledImages
from robench.data.preprocessing import Preprocessing

KIND = "imagenet-c"
# The folder some downloads keep the extra corruptions in.
EXTRA_FOLDER = "extra"


def _has_severity_folders(folder: Path) -> bool:
    return any(_NUMERIC.fullmatch(p.name) for p in _subfolders(folder))


def _candidates(root: Path) -> list[Path]:
    """ROOT's folders, those of ROOT/extra in its place."""
    return [
        inner
        for folder in _subfolders(root)
        for inner in (_subfolders(folder) if folder.name == EXTRA_FOLDER else [folder])
    ]


def looks_like_imagenet_c(root: Path) -> bool:
    """True when ROOT holds a corruption folder (or `extra/<corruption>`) with severities."""
    return any(f.name in ALL_CORRUPTIONS and _has_severity_folders(f) for f in _candidates(root))


def corruption_folders(root: Path) -> dict[str, Path]:
    """Corruption name -> folder, from ROOT and ROOT/extra; DataError on unknown folders."""
    found: dict[str, Path] = {}
    unknown: list[str] = []
    for candidate in _candidates(root):
        name = candidate.name
        if name not in ALL_CORRUPTIONS:
            unknown.append(candidate.relative_to(root).as_posix())
        elif name in found:
            raise DataError(
                f"{root} holds corruption {name!r} twice ({found[name]} and {candidate}); "
                "keep one copy."
            )
        else:
            found[name] = candidate
    if unknown:
        raise DataError(
            f"{root} has folders that are not ImageNet-C corruptions: {shown_names(unknown)}; "
            f"expected ROOT/<corruption>/<severity>/<wnid>/<image> (or ROOT/extra/<corruption>/"
            f"...) with corruptions among {', '.join(ALL_CORRUPTIONS)}, so move the others out."
        )
    if not found:
        raise DataError(
            f"{root} has no ImageNet-C corruption folders; expected "
            "ROOT/<corruption>/<severity>/<wnid>/<image>, e.g. ROOT/gaussian_noise/1/n01440764/."
        )
    return found


def _severity_folders(folder: Path) -> dict[int, Path]:
    subfolders = _subfolders(folder)
    bad = [
        p.name
        for p in subfolders
        if not _NUMERIC.fullmatch(p.name) or int(p.name) not in SEVERITIES
    ]
    if bad or not subfolders:
        what = f"has folders {shown_names(bad)}" if bad else "has no severity folders"
        raise DataError(
            f"ImageNet-C corruption folder {folder} {what}; expected severity folders "
            f"{', '.join(map(str, SEVERITIES))} holding <wnid>/<image>."
        )
    return {int(p.name): p for p in subfolders}


def _member(folder: Path, preprocessing: Preprocessing, note: str) -> LabeledImages:
    folders = class_folders(folder)
    if not folders:
        raise DataError(
            f"ImageNet-C severity folder {folder} has no class folders; expected "
            f"{folder}/<wnid>/<image>."
        )
    if all(WNID.fullmatch(name) for name in folders):
        labels = imagenet_1k_labels(folder, list(folders), KIND)
        classes = list(imagenet_1k_wnids())
        index_note = "class indices are the ImageNet-1k indices of the wnid folders"
    else:
        classes, index_note = _indices_from_names(list(folders))
        labels = {name: i for i, name in enumerate(classes)}
    member = FolderImages(
        folder,
        preprocessing,
        folders=folders,
        labels=labels,
        classes=classes,
        class_index_note=index_note,
        preprocessing_note=note,
    )
    member.kind = KIND
    return member


class ImageNetC(CorruptionFamily):
    """ImageNet-C: a member per (corruption, severity) folder, centre-cropped without resize."""

    kind = KIND

    def __init__(self, root: str | Path, preprocessing: Preprocessing) -> None:
        root = Path(root)
        crop = preprocessing.crop_only()
        height, width = crop.height_width
        note = (
            f"ImageNet-C images (224x224 as released) are centre-cropped to {height}x{width} "
            "without resizing, as Hendrycks' test script does"
        )
        members = {
            (corruption, severity): _member(severity_folder, crop, note)
            for corruption, folder in corruption_folders(root).items()
            for severity, severity_folder in _severity_folders(folder).items()
        }
        super().__init__(kind=KIND, root=root, members=members, preprocessing_note=note)
