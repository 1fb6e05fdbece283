"""ImageNet distribution-shift test sets in their released folder layouts (ImageNet-A/R, -V2,
-Sketch, and an ImageNet validation folder); labels and classes of each: docs/datasets.md,
"The layouts". All use the default resize + centre crop.
"""

from __future__ import annotations

from pathlib import Path

from robench._core.errors import DataError, shown_names
from robench.data.image_folder import _NUMERIC, FolderImages, class_folders
from robench.data.imagenet_classes import imagenet_1k_labels, imagenet_1k_wnids
from robench.data.label_space import LabelSpace, read_label_space
from robench.data.preprocessing import Preprocessing

# Display names of the shipped 200-class label spaces.
_TITLES = {"imagenet-a": "ImageNet-A", "imagenet-r": "ImageNet-R"}


def _folders(root: Path, layout: str, shape: str) -> dict[str, Path]:
    folders = class_folders(root)
    if not folders:
        raise DataError(
            f"{root} has no class folders; the {layout} layout expects {shape}, point at the "
            "folder that holds them."
        )
    return folders


def _mismatch(root: Path, space: LabelSpace, folders: set[str]) -> str:
    title = _TITLES.get(space.name, space.name)
    missing = [w for w in space.wnids if w not in folders]
    unknown = sorted(folders - set(space.wnids))
    parts = []
    if missing:
        parts.append(f"{len(missing)} listed wnid(s) have no folder ({shown_names(missing)})")
    if unknown:
        parts.append(f"{len(unknown)} folder(s) are not in the list ({shown_names(unknown)})")
    others = [
        _TITLES.get(name, name)
        for name in _TITLES
        if name != space.name and folders == set(read_label_space(name).wnids)
    ]
    hint = f"; these are the {others[0]} classes, open it as that layout" if others else ""
    return (
        f"{root} is not a complete {title} folder: its class folders must be exactly the "
        f"{len(space)} wnids of the shipped {space.name} list "
        f"(robench/data/classes/{space.name.replace('-', '_')}_wnids.txt), but "
        f"{' and '.join(parts)}{hint}; point at the full {title} download."
    )


class LabelSpaceFolder(FolderImages):
    """ImageNet-A or -R: `ROOT/<wnid>/<image>` over exactly a shipped label space's wnids."""

    def __init__(self, root: str | Path, preprocessing: Preprocessing, space_name: str) -> None:
        root = Path(root)
        space = read_label_space(space_name)
        folders = _folders(root, space_name, "ROOT/<wnid>/<image>")
        if set(folders) != set(space.wnids):
            raise DataError(_mismatch(root, space, set(folders)))
        self.kind = space_name
        super().__init__(
            root,
            preprocessing,
            folders=folders,
            labels={wnid: k for k, wnid in enumerate(space.wnids)},
            classes=list(space.wnids),
            class_index_note=(
                f"labels are positions in the shipped {space.name} list of {len(space)} wnids "
                "(ImageFolder order); the model's logits are restricted to their ImageNet-1k "
                "indices and the argmax is taken among them"
            ),
            output_classes=space.output_classes,
            label_space=space,
        )


def looks_like_imagenet_v2(root: Path) -> bool:
    """True when the class folders are exactly `0` .. `999` (a complete ImageNet-V2 copy)."""
    names = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")}
    return names == {str(i) for i in range(1000)}


class ImageNetV2Folder(FolderImages):
    """ImageNet-V2: `ROOT/<class index>/<image>`, label = the folder's number."""

    kind = "imagenet-v2"

    def __init__(self, root: str | Path, preprocessing: Preprocessing) -> None:
        root = Path(root)
        folders = _folders(root, self.kind, "ROOT/<0..999>/<image>")
        wnids = imagenet_1k_wnids()
        bad = sorted(
            name
            for name in folders
            if not _NUMERIC.fullmatch(name) or int(name) >= len(wnids) or str(int(name)) != name
        )
        if bad:
            raise DataError(
                f"{root} has {len(bad)} class folder(s) that are not ImageNet-1k class indices: "
                f"{shown_names(bad)}; the imagenet-v2 layout expects folders named 0 .. 999 (no "
                "leading zeros), so rename or remove them."
            )
        super().__init__(
            root,
            preprocessing,
            folders=folders,
            labels={name: int(name) for name in folders},
            classes=list(wnids),
            class_index_note=(
                "class indices are the folder names (ImageNet-1k indices, folder n is class n)"
            ),
        )


class ImageNetWnidFolder(FolderImages):
    """ImageNet (validation) folder `ROOT/<wnid>/<image>`, label = the wnid's ImageNet-1k
    index, even when only some of the 1000 classes are present (a plain image folder would
    number the present folders 0..K-1)."""

    kind = "imagenet"

    def __init__(self, root: str | Path, preprocessing: Preprocessing) -> None:
        root = Path(root)
        folders = _folders(root, self.kind, "ROOT/<wnid>/<image>")
        super().__init__(
            root,
            preprocessing,
            folders=folders,
            labels=imagenet_1k_labels(root, list(folders), self.kind),
            classes=list(imagenet_1k_wnids()),
            class_index_note="class indices are the ImageNet-1k indices of the wnid folders",
        )


class ImageNetSketchFolder(ImageNetWnidFolder):
    """ImageNet-Sketch: `ROOT/<wnid>/<image>`, label = the wnid's ImageNet-1k index."""

    kind = "imagenet-sketch"
