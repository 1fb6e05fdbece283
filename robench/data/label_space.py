"""Label spaces: evaluating a 1000-way ImageNet classifier on a subset of its classes.

A label space is a list of ImageNet-1k wnids (shipped: "imagenet-a", "imagenet-r"; or any wnid
list file). Its labels are positions in the list: label k is the list's k-th wnid. The protocol
(Hendrycks' ImageNet-A/R eval.py, timm's `--valid-labels`): run the model as usual, keep only
the logit columns `output_classes` (the listed wnids' ImageNet-1k indices, in list order),
take the argmax among them, and compare that 0..K-1 position with the label. Softmax, for
confidence or calibration, is taken over the kept columns only. Taking the argmax over all 1000
outputs is a different protocol with lower numbers. Wrapping the model is not done here: this
module provides the data side (labels and `output_classes`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from robench._core.errors import DataError, shown_names
from robench._core.registry import did_you_mean
from robench.data.corruption_family import CorruptionFamily
from robench.data.imagenet_classes import (
    WNID,
    imagenet_1k_index,
    read_wnid_list,
    shipped_label_spaces,
)
from robench.data.labeled import LabeledImages


@dataclass(frozen=True)
class LabelSpace:
    """A list of ImageNet-1k classes that labels are positions in."""

    # "imagenet-a", "imagenet-r", or the file name of a wnid list.
    name: str
    # The listed wnids in list order; label k is wnids[k].
    wnids: tuple[str, ...]
    # ImageNet-1k index (model output) of each listed wnid, in list order.
    output_classes: tuple[int, ...]
    # Hex sha256 of the wnids joined by "\n" (comments in the file do not change it).
    sha256: str
    # The list file's path, or "shipped" for a list shipped with robench.
    source: str

    @classmethod
    def from_wnids(cls, name: str, wnids: tuple[str, ...], source: str) -> LabelSpace:
        """Build from wnids; DataError naming any wnid that is not an ImageNet-1k class."""
        index = imagenet_1k_index()
        unknown = [w for w in wnids if w not in index]
        if unknown:
            raise DataError(
                f"label space {name} lists {len(unknown)} wnid(s) that are not ImageNet-1k "
                f"classes: {shown_names(unknown)}; list only wnids of "
                "robench/data/classes/imagenet1k_wnids.txt."
            )
        digest = hashlib.sha256("\n".join(wnids).encode("ascii")).hexdigest()
        return cls(name, wnids, tuple(index[w] for w in wnids), digest, source)

    def __len__(self) -> int:
        return len(self.wnids)


def read_label_space(name_or_path: str | Path) -> LabelSpace:
    """A shipped label space by name ("imagenet-a", "imagenet-r") or a wnid-list file."""
    shipped = shipped_label_spaces()
    if str(name_or_path) in shipped:
        name = str(name_or_path)
        return LabelSpace.from_wnids(name, read_wnid_list(shipped[name]), "shipped")
    path = Path(name_or_path)
    if path.is_file():
        return LabelSpace.from_wnids(path.name, read_wnid_list(path), str(path))
    if path.exists() or path.suffix or len(path.parts) > 1:
        raise DataError(
            f"label space file {path} does not exist or is not a file; pass a text file with "
            f"one ImageNet wnid per line, or a shipped label space ({', '.join(shipped)})."
        )
    raise DataError(
        did_you_mean(str(name_or_path), list(shipped), "label space")[:-1]
        + " (or pass a path to a text file with one ImageNet wnid per line)."
    )


class LabelSpaceView(LabeledImages):
    """The items of `base` whose class is in a label space, relabelled to list positions."""

    def __init__(self, base: LabeledImages, space: LabelSpace, indices: list[int]) -> None:
        position = {wnid: k for k, wnid in enumerate(space.wnids)}
        # Item i of the view is item indices[i] of base.
        self.base, self.indices = base, indices
        self.kind = base.kind
        self.native_channels = base.native_channels
        super().__init__(
            root=base.root,
            split=base.split,
            classes=list(space.wnids),
            class_index_note=(
                f"labels are positions in label space {space.name} ({len(space)} wnids, sha256 "
                f"{space.sha256[:12]}); the model's logits are restricted to their ImageNet-1k "
                "indices and the argmax is taken among them"
            ),
            targets=[position[base.classes[base.targets[i]]] for i in indices],
            preprocessing=base.preprocessing,
            output_classes=space.output_classes,
            label_space=space,
            preprocessing_note=base.preprocessing_note,
        )

    def relative_paths(self) -> list[str] | None:
        """The base's relative paths of the kept items; None when the base has none."""
        names = getattr(self.base, "relative_paths", None)
        paths = names() if names else None
        return None if paths is None else [paths[i] for i in self.indices]

    def _load_image(self, index: int) -> torch.Tensor:
        return self.base[self.indices[index]][0]

    def _load_images(self, indices: Sequence[int]) -> list[torch.Tensor]:
        return [image for image, _ in self.base.__getitems__([self.indices[i] for i in indices])]


def restrict_to_label_space(dataset: LabeledImages, space: LabelSpace) -> LabeledImages:
    """A view of `dataset` (class names = ImageNet wnids, e.g. the ImageNet val folder) that
    keeps only the samples of the space's classes, labelled by their position in the list,
    with `output_classes` set: evaluate it by restricting the model's logits to
    `output_classes` and taking the argmax among them. A corruption family is restricted
    member by member. DataError when the classes are not wnids or a listed wnid is not one.
    """
    if isinstance(dataset, CorruptionFamily):
        return dataset.map_members(lambda member: restrict_to_label_space(member, space))
    not_wnids = [c for c in dataset.classes if not WNID.fullmatch(c)]
    if not_wnids:
        raise DataError(
            f"dataset {dataset.root} has classes that are not ImageNet wnids "
            f"({shown_names(not_wnids)}), so label space {space.name} cannot select from it; use "
            "data whose class folders are wnids like n01440764 (the ImageNet val layout)."
        )
    classes = set(dataset.classes)
    missing = [w for w in space.wnids if w not in classes]
    if missing:
        raise DataError(
            f"{len(missing)} of the {len(space)} wnids of label space {space.name} are not "
            f"classes of dataset {dataset.root}: {shown_names(missing)}; point at data that has "
            "every listed class (e.g. the full ImageNet val folder) or shorten the list."
        )
    kept = set(space.wnids)
    indices = [i for i, label in enumerate(dataset.targets) if dataset.classes[label] in kept]
    return LabelSpaceView(dataset, space, indices)
