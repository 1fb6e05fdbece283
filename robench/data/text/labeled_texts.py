"""Labelled texts for text classification: `read_labeled_texts(path, split)` -> `LabeledTexts`.

Columns, labels and class names: docs/text-classification.md, "Layouts".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robench._core.errors import DataError
from robench.data.text.labeled_files import (
    LAYOUTS,
    SPLIT_NAMES,
    MissingSplit,
    ReadColumns,
    detect_layout,
)

__all__ = [
    "BUILTIN",
    "LAYOUTS",
    "SPLIT_NAMES",
    "LabeledTexts",
    "MissingSplit",
    "classes_and_indices",
    "detect_layout",
    "read_labeled_texts",
    "required_modules",
]

BUILTIN = "python-docs-sections"  # paragraphs of the Python docs by part (docs_sections.py)
# Layout -> the module of an optional extra its reader imports (robench/_core/extras.py).
LAYOUT_MODULES = {"parquet": "pyarrow", "arrow": "pyarrow"}


def required_modules(path: str | Path, layout: str | None = None) -> dict[str, str]:
    """Module -> what needs it, for reading `path` (checked before a run loads anything)."""
    root = Path(path)
    chosen = layout or (detect_layout(root) if str(path) != BUILTIN and root.exists() else None)
    module = LAYOUT_MODULES.get(chosen or "")
    return {module: f"reading {chosen} data ({root})"} if module else {}


@dataclass(frozen=True)
class LabeledTexts:
    """One split of a text-classification dataset: texts, label indices and class names."""

    texts: tuple[str, ...]
    labels: tuple[int, ...]
    classes: tuple[str, ...]
    root: Path
    layout: str
    split: str

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, index: int) -> tuple[str, int]:
        return self.texts[index], self.labels[index]


def classes_and_indices(
    labels: list[Any], names: list[str] | None, where: str
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Class names and each label's index in them."""
    if all(isinstance(v, int) and not isinstance(v, bool) for v in labels):
        if any(v < 0 for v in labels):  # Hugging Face's unlabelled test splits use -1
            raise DataError(
                f"{where} has negative labels (unlabelled examples, as in SST-2's test split); "
                "evaluate a labelled split (e.g. --split validation)."
            )
        classes = names or [str(i) for i in range(max(labels, default=-1) + 1)]
        return tuple(classes), tuple(labels)
    strings = [str(v).strip() for v in labels]
    if all(s.lstrip("-").isdigit() for s in strings):  # CSV and TSV cells are text
        return classes_and_indices([int(s) for s in strings], names, where)
    classes = names or sorted(set(strings))
    index = {name: i for i, name in enumerate(classes)}
    return tuple(classes), tuple(index[s] for s in strings)


def _builtin(split: str | None) -> LabeledTexts:
    from robench.data.text.corpora import python_docs_root
    from robench.data.text.docs_sections import DOCS_SECTIONS, read_docs_sections

    root = python_docs_root()
    texts, labels = read_docs_sections(root, split or "test")
    return LabeledTexts(tuple(texts), tuple(labels), DOCS_SECTIONS, root, BUILTIN, split or "test")


def read_labeled_texts(
    path: str | Path,
    split: str | None = None,
    *,
    layout: str | None = None,
    text_field: str | None = None,
    label_field: str = "label",
) -> LabeledTexts:
    """Read one labelled split (None: the layout's labelled evaluation split, `dev.tsv` for
    GLUE, else `test`); one sentence for a missing column, labels or layout."""
    if str(path) == BUILTIN:
        return _builtin(split)
    root = Path(path)
    if not root.exists():
        raise DataError(f"text data {root} does not exist; pass a file or folder that does.")
    chosen = layout or detect_layout(root)
    if chosen not in LAYOUTS:
        raise _unknown_layout(root, chosen)
    reader, default_text = LAYOUTS[chosen]
    if split is not None and root.is_file() and split not in SPLIT_NAMES:
        raise DataError(
            f"{root} is one file, read whole as one split, and --split {split} is no split "
            f"name ({', '.join(SPLIT_NAMES)}); leave --split out, or pass a folder of "
            "SPLIT files."
        )
    split = split or ("validation" if chosen == "glue-tsv" else "test")
    text_field = text_field or default_text
    columns = reader(root, split, text_field, label_field)
    texts = _checked_texts(columns, text_field)
    labels = _checked_labels(columns, split, label_field)
    classes, indices = classes_and_indices(labels, columns.names, f"{root} ({split})")
    return LabeledTexts(texts, indices, classes, root, chosen, split)


def _unknown_layout(root: Path, chosen: str | None) -> DataError:
    if chosen is not None:  # named by a suite's [datasets.NAME] layout
        return DataError(
            f"{chosen!r} is not a text-data layout, so {root} cannot be read; set the suite "
            f"dataset's layout to one of {', '.join(LAYOUTS)}."
        )
    return DataError(
        f"cannot tell the layout of {root}: labelled texts are a .tsv, .csv, .jsonl or .parquet "
        "file, a folder of SPLIT files in one of those formats, or a `datasets` save_to_disk "
        "folder (docs/text-data.md); pass such data with --data."
    )


def _checked_texts(columns: ReadColumns, field: str) -> tuple[str, ...]:
    """The texts, each a string; one sentence for a row without one or a file of none."""
    if not columns.texts:
        raise DataError(
            f"{columns.source} holds no texts (a header or schema but no rows); add labelled "
            "texts, or pass another file with --data."
        )
    for row, text in enumerate(columns.texts):
        if text is None:
            raise DataError(
                f"{columns.where(row)} has no text under {field!r}; give every row its text, "
                "or name the text column with --text-field."
            )
        if not isinstance(text, str):
            raise DataError(
                f"{columns.where(row)} has {type(text).__name__} {str(text)[:40]!r} under "
                f"{field!r}, not a string; store texts as strings, or name the text column "
                "with --text-field."
            )
    if not any(text.strip() for text in columns.texts):
        raise DataError(
            f"every text under {field!r} in {columns.source} is empty; fill in the texts, or "
            "name the text column with --text-field."
        )
    return tuple(columns.texts)


def _checked_labels(columns: ReadColumns, split: str, field: str) -> list[Any]:
    """The labels, each a number or a string; one sentence for a split without them or a row
    without one."""
    if columns.labels is None:
        raise DataError(
            f"the {split} split of {columns.source} has no labels under {field!r}; evaluate a "
            "labelled split (GLUE's test.tsv has none: use --split validation) or name the "
            "label column with --label-field."
        )
    labels = []
    for row, label in enumerate(columns.labels):
        if label is None or (isinstance(label, str) and not label.strip()):
            raise DataError(
                f"{columns.where(row)} has no label under {field!r}; label every row, or "
                "evaluate a labelled split."
            )
        if isinstance(label, float) and label.is_integer():
            label = int(label)  # a column of whole numbers stored as floats (pandas with NaN)
        if not isinstance(label, int | str):  # bool is an int: true/false are two classes
            raise DataError(
                f"{columns.where(row)} has {type(label).__name__} {str(label)[:40]!r} as its "
                f"label under {field!r}; labels are class indices (0, 1, ...) or class names."
            )
        labels.append(label)
    return labels
