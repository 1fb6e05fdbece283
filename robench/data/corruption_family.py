"""`CorruptionFamily`: one dataset per (corruption, severity) of a pre-rendered corruption set.

Members must agree item for item (same relative paths, or for array data the same labels), so
that item i is the same image in every member: paired statistics between corruptions and
severities rely on it. docs/datasets.md, "The layouts" (`imagenet-c`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import torch

from robench._core.corruption_names import ALL as ALL_CORRUPTIONS
from robench._core.corruption_names import EXTRA as EXTRA_CORRUPTIONS
from robench._core.corruption_names import SEVERITIES
from robench._core.corruption_names import STANDARD as CORRUPTIONS
from robench._core.errors import DataError
from robench.data.labeled import LabeledImages

__all__ = ["ALL_CORRUPTIONS", "CORRUPTIONS", "EXTRA_CORRUPTIONS", "SEVERITIES", "CorruptionFamily"]

Key = tuple[str, int]  # (corruption, severity)


def _order(key: Key) -> tuple[int, str, int]:
    corruption, severity = key
    rank = (
        ALL_CORRUPTIONS.index(corruption) if corruption in ALL_CORRUPTIONS else len(ALL_CORRUPTIONS)
    )
    return rank, corruption, severity


def _label(key: Key) -> str:
    return f"{key[0]}/{key[1]}"


def relative_paths_of(member: LabeledImages) -> list[str] | None:
    """The dataset's `relative_paths()`, or None when it has none (array data)."""
    paths = getattr(member, "relative_paths", None)
    return paths() if paths else None


def _disagreement(
    first: LabeledImages, first_names: list[str] | None, other: LabeledImages
) -> str | None:
    """How `other` differs from `first` (first differing file or label), or None."""
    if other.classes != first.classes:
        return f"its classes differ ({len(other.classes)} vs {len(first.classes)})"
    names = relative_paths_of(other)
    if names is not None and first_names is not None and names != first_names:
        lacking = sorted(set(first_names) - set(names))
        if lacking:
            return f"it lacks {lacking[0]!r} ({len(lacking)} file(s) missing)"
        extra = sorted(set(names) - set(first_names))
        if extra:
            return f"it has {extra[0]!r}, which the other does not ({len(extra)} extra file(s))"
        i = next(i for i, (a, b) in enumerate(zip(names, first_names, strict=True)) if a != b)
        return f"its item {i} is {names[i]!r}, not {first_names[i]!r}"
    if other.targets != first.targets:
        if len(other.targets) != len(first.targets):
            return f"it has {len(other.targets)} items, not {len(first.targets)}"
        i = next(
            i for i, (a, b) in enumerate(zip(other.targets, first.targets, strict=True)) if a != b
        )
        where = f" ({names[i]!r})" if names is not None else ""
        return f"its item {i}{where} has label {other.targets[i]}, not {first.targets[i]}"
    return None


class CorruptionFamily(LabeledImages):
    """Members by (corruption, severity), which agree item for item."""

    def __init__(
        self,
        *,
        kind: str,
        root: Path,
        members: dict[Key, LabeledImages],
        preprocessing_note: str | None = None,
    ) -> None:
        if not members:
            raise ValueError("a corruption family needs at least one member")
        # Members in canonical order: corruptions as in ALL_CORRUPTIONS, then severity.
        self.members = {key: members[key] for key in sorted(members, key=_order)}
        first_key, first = next(iter(self.members.items()))
        first_names = relative_paths_of(first)
        for key, member in self.members.items():
            problem = _disagreement(first, first_names, member)
            if problem is not None:
                raise DataError(
                    f"{kind} member {_label(key)} ({member.root}) does not match member "
                    f"{_label(first_key)}: {problem}; every corruption and severity must hold "
                    "the same images under the same names, so restore or remove the odd files."
                )
        self.kind = kind
        self.native_channels = first.native_channels
        super().__init__(
            root=root,
            classes=first.classes,
            class_index_note=first.class_index_note,
            targets=first.targets,
            preprocessing=first.preprocessing,
            output_classes=first.output_classes,
            label_space=first.label_space,
            preprocessing_note=preprocessing_note or first.preprocessing_note,
        )

    @property
    def corruptions(self) -> tuple[str, ...]:
        """The corruptions present, in canonical order."""
        return tuple(dict.fromkeys(corruption for corruption, _ in self.members))

    @property
    def severities(self) -> tuple[int, ...]:
        """The severities present in any corruption, ascending."""
        return tuple(sorted({severity for _, severity in self.members}))

    def member(self, corruption: str, severity: int) -> LabeledImages | None:
        """The dataset of one corruption at one severity; None when it is not present."""
        return self.members.get((corruption, severity))

    def missing(self, corruptions: Iterable[str], severities: Iterable[int]) -> list[Key]:
        """The (corruption, severity) pairs asked for that the family does not hold."""
        wanted = list(severities)
        return [(c, s) for c in corruptions for s in wanted if (c, s) not in self.members]

    def map_members(self, fn: Callable[[LabeledImages], LabeledImages]) -> CorruptionFamily:
        """A family of the same kind whose members are `fn(member)` (e.g. a label-space view)."""
        return CorruptionFamily(
            kind=self.kind,
            root=self.root,
            members={key: fn(member) for key, member in self.members.items()},
            preprocessing_note=self.preprocessing_note,
        )

    def relative_paths(self) -> list[str] | None:
        """The members' shared item paths `<class>/<file>`; None for array data."""
        return relative_paths_of(next(iter(self.members.values())))

    def _load_image(self, index: int) -> torch.Tensor:
        return next(iter(self.members.values()))[index][0]

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(kind={self.kind!r}, root={str(self.root)!r}, "
            f"members={len(self.members)}, items={len(self)}, classes={len(self.classes)})"
        )
