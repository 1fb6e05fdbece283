"""The ImageNet class lists shipped in `robench/data/classes/` (provenance in its README.md);
docs/datasets.md, "Class lists and label spaces". A list's 0-based position among its data
lines (`#` and blank lines skipped) is the class index.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from robench._core.errors import DataError, shown_names
from robench.data.class_map import read_unique_lines

CLASSES_DIR = Path(__file__).resolve().parent / "classes"

# A WordNet noun id as ImageNet spells it: "n" and eight digits.
WNID = re.compile(r"n[0-9]{8}")

# Label spaces shipped with robench: name -> file in CLASSES_DIR.
_SHIPPED_FILES = {"imagenet-a": "imagenet_a_wnids.txt", "imagenet-r": "imagenet_r_wnids.txt"}


def read_wnid_list(path: str | Path) -> tuple[str, ...]:
    """The wnids of a list file in order; DataError when it is unreadable, empty, repeats a
    wnid or holds a line that is not a wnid."""
    path = Path(path)

    def check(wnid: str, line_no: int) -> None:
        if not WNID.fullmatch(wnid):
            raise DataError(
                f"wnid list {path} line {line_no} is {wnid!r}, not a wnid; write one ImageNet "
                "wnid like n01440764 per line (comments start with #)."
            )

    return tuple(
        read_unique_lines(path, "wnid list", "ImageNet wnid like n01440764", "wnids", check, str)
    )


@functools.cache
def imagenet_1k_wnids() -> tuple[str, ...]:
    """The 1000 ImageNet-1k wnids in class-index order (read once, then cached)."""
    return read_wnid_list(CLASSES_DIR / "imagenet1k_wnids.txt")


@functools.cache
def imagenet_1k_index() -> dict[str, int]:
    """wnid -> ImageNet-1k class index (the model output it is)."""
    return {wnid: i for i, wnid in enumerate(imagenet_1k_wnids())}


def shipped_label_spaces() -> dict[str, Path]:
    """The wnid lists shipped with robench, by label-space name."""
    return {name: CLASSES_DIR / file for name, file in _SHIPPED_FILES.items()}


def imagenet_1k_labels(root: Path, folder_names: list[str], layout: str) -> dict[str, int]:
    """ImageNet-1k class index of each wnid-named folder; DataError naming unknown folders."""
    index = imagenet_1k_index()
    unknown = sorted(name for name in folder_names if name not in index)
    if unknown:
        raise DataError(
            f"{root} has {len(unknown)} class folder(s) that are not ImageNet-1k wnids: "
            f"{shown_names(unknown)}; "
            f"the {layout} layout expects ROOT/<wnid>/<image> with wnids of "
            "robench/data/classes/imagenet1k_wnids.txt, so rename or remove them."
        )
    return {name: index[name] for name in folder_names}
