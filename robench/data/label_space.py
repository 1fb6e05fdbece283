"""Label spaces: evaluating a 1000-way ImageNet classifier on a subset of its classes.

What a label space is and the protocol its labels and `output_classes` serve (Hendrycks'
ImageNet-A/R eval.py, timm's `--valid-labels`): docs/datasets.md, "Class lists and label
spaces". Wrapping the model is not done here: this module and label_space_view.py provide the
data side.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from robench._core.bundled import shipped_or_file
from robench._core.errors import DataError, shown_names
from robench.data.imagenet_classes import (
    imagenet_1k_index,
    read_wnid_list,
    shipped_label_spaces,
)


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
    holds = "one ImageNet wnid per line"
    path = shipped_or_file(name_or_path, shipped, "label space", holds, DataError)
    if str(name_or_path) in shipped:
        return LabelSpace.from_wnids(str(name_or_path), read_wnid_list(path), "shipped")
    return LabelSpace.from_wnids(path.name, read_wnid_list(path), str(path))
