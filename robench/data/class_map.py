"""Class maps (`--class-map FILE`): which class folder gets which class index.

The file holds one class folder name per line, as timm's `--class-map` does: the n-th name is
class index n - 1. Blank lines and lines starting with `#` are skipped, so they do not take an
index; surrounding whitespace is stripped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from robench._core.errors import DataError


@dataclass(frozen=True)
class ClassMap:
    """Class names in index order, read from `path`."""

    # The file the map was read from (shown in reports).
    path: Path
    # Class folder names; the position in the tuple is the class index.
    names: tuple[str, ...]
    # name -> class index, derived from `names`.
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {name: i for i, name in enumerate(self.names)})

    def __len__(self) -> int:
        return len(self.names)


def read_unique_lines(
    path: Path,
    what: str,
    item: str,
    items: str,
    check: Callable[[str, int], None] | None = None,
    show: Callable[[str], str] = repr,
) -> list[str]:
    """The stripped lines of a UTF-8 list file, blank and `#` lines skipped, `check(line,
    number)` raising for a bad one; DataError when the file is unreadable, empty or repeats a
    line. `what` names the file in messages ("class map"), `item` what a line holds and
    `items` their plural; `show` writes a line in messages."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(
            f"cannot read {what} {path} ({exc}); pass a UTF-8 text file with one {item} per line."
        ) from None
    first_line: dict[str, int] = {}  # in file order
    for line_no, raw in enumerate(text.splitlines(), start=1):
        name = raw.strip()
        if not name or name.startswith("#"):
            continue
        if check is not None:
            check(name, line_no)
        if name in first_line:
            raise DataError(
                f"{what} {path} lists {show(name)} twice (lines {first_line[name]} and {line_no}); "
                f"each {item} must appear once, remove the duplicate."
            )
        first_line[name] = line_no
    if not first_line:
        raise DataError(f"{what} {path} names no {items}; write one {item} per line.")
    return list(first_line)


def read_class_map(path: str | Path) -> ClassMap:
    """Read a class map file; DataError when it is missing, empty or repeats a name."""
    path = Path(path)
    names = read_unique_lines(path, "class map", "class folder name", "classes")
    return ClassMap(path=path, names=tuple(names))


def _label_keys(label: str) -> set[str]:
    """Spellings a class name is matched by: letters and digits only, lower case, whole or
    its first comma-separated alias ("tench, Tinca tinca" -> "tench")."""
    whole = "".join(c for c in label.lower() if c.isalnum())
    first = "".join(c for c in label.split(",")[0].lower() if c.isalnum())
    return {key for key in (whole, first) if key}


def class_map_from_labels(
    folder_names: list[str], labels: list[str], source: str
) -> ClassMap | None:
    """A class map placing each class folder at the model's output of the same name, or None
    unless every folder matches exactly one label (docs/models.md, "Labels"); `source` names
    the labels in reports ("hf:/models/vit id2label")."""
    by_key: dict[str, list[int]] = {}
    for index, label in enumerate(labels):
        for key in _label_keys(label):
            by_key.setdefault(key, []).append(index)
    names = list(labels)
    taken: set[int] = set()
    for folder in folder_names:
        matches = {i for key in _label_keys(folder) for i in by_key.get(key, [])}
        if len(matches) != 1 or matches & taken:
            return None
        index = matches.pop()
        taken.add(index)
        names[index] = folder
    if not folder_names or len(set(names)) != len(names):
        return None
    return ClassMap(path=Path(source), names=tuple(names))
