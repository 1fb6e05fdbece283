"""Labelled texts for text classification: `read_labeled_texts(path, split)` -> `LabeledTexts`.

Layouts (detected from the path, or chosen with `layout=`):
- `glue-tsv`: GLUE's SST-2 release, `{train,dev,test}.tsv` with a header (`sentence\\tlabel`),
  or one .tsv file; the default split is the labelled `dev.tsv` (GLUE's test has no labels).
- `csv`: a .csv file, or `SPLIT.csv` files in a folder.
- `jsonl`: a .jsonl file (one JSON object per line), or `SPLIT.jsonl` files in a folder.
- `parquet`: a .parquet file, or a folder of `SPLIT*.parquet` (also under `data/`, as the
  Hugging Face Hub stores datasets).
- `arrow`: a folder written by `datasets`' `save_to_disk`, a Dataset or a DatasetDict.
The text and label columns are `text_field` / `label_field` ("sentence" and "label" for
GLUE, "text" and "label" otherwise). Class names come from the data when it has them (a
`ClassLabel` feature of an arrow or Hub parquet dataset), else from the labels: integers
0..max, or the sorted distinct strings. docs/text-classification.md (Data) describes each layout.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robench._core.errors import DataError

BUILTIN = "python-docs-sections"  # paragraphs of the Python docs by part (docs_sections.py)
SPLIT_NAMES = {  # accepted split name -> the names files of that split may carry
    "train": ("train",),
    "validation": ("validation", "valid", "val", "dev"),
    "test": ("test",),
}
SPLIT_NAMES["valid"] = SPLIT_NAMES["dev"] = SPLIT_NAMES["val"] = SPLIT_NAMES["validation"]


class MissingSplit(DataError):
    """The data has no file (or arrow folder) for the asked split."""


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


@dataclass(frozen=True)
class _Columns:
    texts: list[Any]
    labels: list[Any] | None  # None: the split has no label column
    names: list[str] | None = None  # class names the data declares


def _split_file(root: Path, split: str, suffix: str, layout: str) -> Path:
    """`root` itself when a file, else its `SPLIT{suffix}` file."""
    if root.is_file():
        return root
    names = SPLIT_NAMES.get(split, (split,))
    for name in names:
        if (root / f"{name}{suffix}").is_file():
            return root / f"{name}{suffix}"
    present = sorted(p.name for p in root.glob(f"*{suffix}"))
    raise MissingSplit(
        f"{layout} folder {root} has no {split} split ({' or '.join(n + suffix for n in names)}; "
        f"it has {', '.join(present) or 'none'}); pick a split it has with --split."
    )


def _column(rows: Sequence[dict[str, Any]], field: str, path: Path, what: str) -> list[Any]:
    if rows and field not in rows[0]:
        raise DataError(
            f"{path} has no {what} column {field!r} (it has {', '.join(map(str, rows[0]))}); "
            f"name it with --{what}-field."
        )
    return [row.get(field) for row in rows]


def _rows_columns(rows: list[dict[str, Any]], path: Path, text: str, label: str) -> _Columns:
    texts = _column(rows, text, path, "text")
    labels = _column(rows, label, path, "label") if rows and label in rows[0] else None
    return _Columns(texts, labels)


def _read_delimited(path: Path, text: str, label: str, delimiter: str) -> _Columns:
    with path.open(encoding="utf-8", newline="") as handle:
        # GLUE's TSVs are not quoted: a sentence may hold a lone '"'.
        if delimiter == "\t":
            reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        else:
            reader = csv.DictReader(handle, delimiter=delimiter)
        rows = list(reader)
    return _rows_columns(rows, path, text, label)


def _read_glue(root: Path, split: str, text: str, label: str) -> _Columns:
    return _read_delimited(_split_file(root, split, ".tsv", "glue-tsv"), text, label, "\t")


def _read_csv(root: Path, split: str, text: str, label: str) -> _Columns:
    return _read_delimited(_split_file(root, split, ".csv", "csv"), text, label, ",")


def _read_jsonl(root: Path, split: str, text: str, label: str) -> _Columns:
    path = _split_file(root, split, ".jsonl", "jsonl")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(
                f"line {number} of {path} is not JSON ({error.msg}); a JSON-lines file has one "
                'object per line, e.g. {"text": "...", "label": 1}.'
            ) from None
        if not isinstance(record, dict):
            raise DataError(f"line {number} of {path} is not a JSON object; write one per line.")
        rows.append(record)
    return _rows_columns(rows, path, text, label)


def _table_columns(table: Any, path: Path, text: str, label: str) -> _Columns:
    """Columns of a pyarrow table; class names from its Hugging Face feature metadata."""
    names = list(table.column_names)
    if text not in names:
        raise DataError(
            f"{path} has no text column {text!r} (it has {', '.join(names)}); name it with "
            "--text-field."
        )
    labels = table.column(label).to_pylist() if label in names else None
    metadata = (table.schema.metadata or {}).get(b"huggingface")
    features = json.loads(metadata).get("info", {}).get("features", {}) if metadata else {}
    return _Columns(table.column(text).to_pylist(), labels, _class_names(features, label))


def _class_names(features: dict[str, Any], label: str) -> list[str] | None:
    feature = features.get(label) or {}
    return list(feature["names"]) if feature.get("_type") == "ClassLabel" else None


def _parquet_files(root: Path, split: str) -> list[Path]:
    if root.is_file():
        return [root]
    for name in SPLIT_NAMES.get(split, (split,)):
        found = sorted(root.glob(f"{name}*.parquet")) + sorted(root.glob(f"data/{name}*.parquet"))
        if found:
            return found
    raise MissingSplit(
        f"parquet folder {root} has no {split} files ({split}*.parquet or data/{split}*.parquet); "
        "pick a split it has with --split."
    )


def _read_parquet(root: Path, split: str, text: str, label: str) -> _Columns:
    pyarrow, parquet = _pyarrow("parquet")
    files = _parquet_files(root, split)
    table = pyarrow.concat_tables([parquet.read_table(f) for f in files])
    return _table_columns(table, files[0], text, label)


def _arrow_split_dir(root: Path, split: str) -> Path:
    """The Dataset folder of `split` in a `save_to_disk` DatasetDict (or `root`, a Dataset)."""
    if (root / "state.json").is_file():
        return root
    splits = json.loads((root / "dataset_dict.json").read_text())["splits"]
    for name in SPLIT_NAMES.get(split, (split,)):
        if name in splits:
            return root / name
    raise MissingSplit(
        f"dataset {root} has no {split} split (it has {', '.join(splits)}); pick one with --split."
    )


def _read_arrow(root: Path, split: str, text: str, label: str) -> _Columns:
    pyarrow, _ = _pyarrow("ipc")
    folder = _arrow_split_dir(root, split)
    state = json.loads((folder / "state.json").read_text())
    tables = []
    for entry in state["_data_files"]:  # arrow stream files, in order
        with pyarrow.memory_map(str(folder / entry["filename"])) as source:
            tables.append(pyarrow.ipc.open_stream(source).read_all())
    table = pyarrow.concat_tables(tables)
    info = json.loads((folder / "dataset_info.json").read_text())
    columns = _table_columns(table, folder, text, label)
    return _Columns(columns.texts, columns.labels, _class_names(info.get("features", {}), label))


def _pyarrow(module: str) -> tuple[Any, Any]:
    try:
        import pyarrow
        import pyarrow.ipc
        import pyarrow.parquet
    except ImportError:
        raise DataError(
            f"reading {module} files needs pyarrow, which is not installed; run "
            "`pip install 'robench[text]'` (or `pip install pyarrow`)."
        ) from None
    return pyarrow, pyarrow.parquet


_Reader = Callable[[Path, str, str, str], _Columns]
LAYOUTS: dict[str, tuple[_Reader, str]] = {  # layout -> (reader, default text field)
    "glue-tsv": (_read_glue, "sentence"),
    "csv": (_read_csv, "text"),
    "jsonl": (_read_jsonl, "text"),
    "parquet": (_read_parquet, "text"),
    "arrow": (_read_arrow, "text"),
}
_SUFFIXES = {".tsv": "glue-tsv", ".csv": "csv", ".jsonl": "jsonl", ".parquet": "parquet"}
# Layout -> the module of an optional extra its reader imports (robench/_core/extras.py).
LAYOUT_MODULES = {"parquet": "pyarrow", "arrow": "pyarrow"}


def required_modules(path: str | Path, layout: str | None = None) -> dict[str, str]:
    """Module -> what needs it, for reading `path` (checked before a run loads anything)."""
    root = Path(path)
    chosen = layout or (detect_layout(root) if str(path) != BUILTIN and root.exists() else None)
    module = LAYOUT_MODULES.get(chosen or "")
    return {module: f"reading {chosen} data ({root})"} if module else {}


def detect_layout(root: Path) -> str | None:
    """The layout a file or folder is in, or None."""
    if root.is_file():
        return _SUFFIXES.get(root.suffix)
    if (root / "dataset_dict.json").is_file() or (root / "state.json").is_file():
        return "arrow"
    for suffix, layout in _SUFFIXES.items():
        if any(root.glob(f"*{suffix}")) or (
            suffix == ".parquet" and any(root.glob("data/*.parquet"))
        ):
            return layout
    return None


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
        raise DataError(
            f"cannot tell the layout of {root}{f' ({chosen!r} is unknown)' if chosen else ''}; "
            f"pass --layout, one of {', '.join(LAYOUTS)}."
        )
    reader, default_text = LAYOUTS[chosen]
    split = split or ("validation" if chosen == "glue-tsv" else "test")
    columns = reader(root, split, text_field or default_text, label_field)
    if columns.labels is None or any(v is None or v == "" for v in columns.labels):
        raise DataError(
            f"the {split} split of {root} has no labels under {label_field!r}; evaluate a "
            "labelled split (GLUE's test.tsv has none: use --split validation) or name the "
            "label column with --label-field."
        )
    classes, labels = classes_and_indices(columns.labels, columns.names, f"{root} ({split})")
    texts = tuple(str(t) for t in columns.texts)
    return LabeledTexts(texts, labels, classes, root, chosen, split)
