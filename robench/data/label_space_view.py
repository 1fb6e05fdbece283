"""A dataset restricted to a label space: the samples of its classes, labelled by their
position in the list (robench/data/label_space.py says what a label space is and why).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from robench._core.errors import DataError, shown_names
from robench.data.corruption_family import CorruptionFamily, relative_paths_of
from robench.data.imagenet_classes import WNID
from robench.data.label_space import LabelSpace
from robench.data.labeled import LabeledImages


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
        paths = relative_paths_of(self.base)
        return None if paths is None else [paths[i] for i in self.indices]

    def _load_image(self, index: int) -> torch.Tensor:
        return self.base[self.indices[index]][0]

    def _load_images(self, indices: Sequence[int]) -> list[torch.Tensor]:
        return [image for image, _ in self.base.__getitems__([self.indices[i] for i in indices])]


def restrict_to_label_space(dataset: LabeledImages, space: LabelSpace) -> LabeledImages:
    """A view of `dataset` (class names = ImageNet wnids) that keeps only the samples of the
    space's classes, relabelled to list positions (docs/datasets.md, `restrict_to_label_space`)."""
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
