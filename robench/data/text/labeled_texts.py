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
0..max, or the sorted distinct strings. docs/text-data.md describes each layout.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robench._core.errors import DataError, first_line

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
    source: Path  # the file (or arrow folder) read, for messages
    names: list[str] | None = None  # class names the data declares
    lines: list[int] | None = None  # each row's line in `source` (csv, tsv, jsonl)

    def where(self, row: int) -> str:
        """Where row `row` is, as a message names it: "line 3 of FILE" or "row 3 of FILE"."""
        if self.lines is not None:
            return f"line {self.lines[row]} of {self.source}"
        return f"row {row + 1} of {self.source}"


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


def _rows_columns(
    rows: list[tuple[int, dict[Any, Any]]], path: Path, text: str, label: str
) -> _Columns:
    """The text and label columns of rows read with their line numbers; the first row
    decides which columns the file has, every row must then have them."""
    lines = [number for number, _ in rows]
    if rows and text not in rows[0][1]:
        keys = ", ".join(str(k) for k in rows[0][1] if k is not None)
        raise DataError(
            f"{path} has no text column {text!r} (it has {keys}); name it with --text-field."
        )
    texts = [row.get(text) for _, row in rows]
    labels = [row.get(label) for _, row in rows] if rows and label in rows[0][1] else None
    return _Columns(texts, labels, path, lines=lines)


def _utf8_text(path: Path) -> str:
    """The text of a UTF-8 file (a leading byte-order mark dropped, as spreadsheets write
    one); one sentence naming the line of the first byte that is not UTF-8."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise DataError(
            f"line {line} of {path} is not UTF-8 text (byte {error.start}); robench reads UTF-8 "
            "text data: convert the file (e.g. `iconv -f latin1 -t UTF-8`)."
        ) from None


def _read_delimited(path: Path, text: str, label: str, delimiter: str) -> _Columns:
    handle = io.StringIO(_utf8_text(path), newline="")
    if delimiter == "\t":  # GLUE's TSVs are not quoted: a sentence may hold a lone '"'
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        # strict: a quote left open or text after a closing quote is an error, not a text
        # that swallows the rest of the file
        reader = csv.DictReader(handle, delimiter=delimiter, strict=True)
    rows = []
    try:
        for row in reader:
            _check_fields(row, reader, path)
            rows.append((reader.line_num, row))
    except csv.Error as error:
        line = reader.line_num + 1  # the line being read when the error came
        if "field limit" in str(error):
            fix = f"split texts longer than {csv.field_size_limit()} characters"
        else:
            fix = 'put fields holding a comma, quote or line break in double quotes ("" inside)'
        raise DataError(
            f"line {line} of {path} cannot be read as {_DELIMITED[delimiter]} ({error}); {fix}."
        ) from None
    return _rows_columns(rows, path, text, label)


_DELIMITED = {"\t": "tab-separated values", ",": "CSV"}


def _check_fields(row: dict[Any, Any], reader: csv.DictReader, path: Path) -> None:
    """Refuse a row with more fields than the header (DictReader keeps them under None): an
    unquoted comma in a text would otherwise cut the text and shift its label."""
    if None in row:
        header = len(reader.fieldnames or ())
        raise DataError(
            f"line {reader.line_num} of {path} has {header + len(row[None])} fields but the "
            f"header has {header}; quote fields that hold the delimiter, or remove the extra "
            "fields."
        )


def _read_glue(root: Path, split: str, text: str, label: str) -> _Columns:
    return _read_delimited(_split_file(root, split, ".tsv", "glue-tsv"), text, label, "\t")


def _read_csv(root: Path, split: str, text: str, label: str) -> _Columns:
    return _read_delimited(_split_file(root, split, ".csv", "csv"), text, label, ",")


def _read_jsonl(root: Path, split: str, text: str, label: str) -> _Columns:
    path = _split_file(root, split, ".jsonl", "jsonl")
    rows = []
    for number, line in enumerate(_utf8_text(path).splitlines(), 1):
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
        rows.append((number, record))
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
    features = _hub_features((table.schema.metadata or {}).get(b"huggingface"))
    return _Columns(table.column(text).to_pylist(), labels, path, _class_names(features, label))


def _hub_features(metadata: bytes | None) -> dict[str, Any]:
    """The features a Hugging Face parquet file declares in its schema metadata, if any."""
    try:
        info = json.loads(metadata).get("info", {}) if metadata else {}
        features = info.get("features", {})
    except (ValueError, AttributeError):  # metadata another writer put under that key
        return {}
    return features if isinstance(features, dict) else {}


def _class_names(features: dict[str, Any], label: str) -> list[str] | None:
    feature = features.get(label)
    if not isinstance(feature, dict) or feature.get("_type") != "ClassLabel":
        return None
    names = feature.get("names")
    return [str(name) for name in names] if isinstance(names, list) else None


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
    tables = []
    for file in files:
        try:
            tables.append(parquet.read_table(file))
        except (pyarrow.ArrowException, OSError) as error:
            raise DataError(
                f"{file} is not a readable parquet file ({_arrow_reason(error)}); pass a parquet "
                "file as pandas, pyarrow or `datasets` write it."
            ) from None
    try:
        table = pyarrow.concat_tables(tables)
    except pyarrow.ArrowException as error:
        raise DataError(
            f"the {split} parquet files of {root} do not share one schema "
            f"({_arrow_reason(error)}); give every file the same columns and types."
        ) from None
    return _table_columns(table, files[0], text, label)


def _arrow_reason(error: Exception) -> str:
    """pyarrow's reason, without the path it repeats and the sentences after the first:
    "Could not open Parquet input source 'x': Parquet magic bytes not found in footer. ..."."""
    return first_line(error).split(". ")[0].rsplit("': ", 1)[-1]


def _json_file(path: Path, what: str) -> Any:
    """A JSON file of a `save_to_disk` folder; one sentence when it is missing or cut off."""
    try:
        return json.loads(_utf8_text(path))
    except FileNotFoundError:
        problem = "is missing"
    except json.JSONDecodeError as error:
        problem = f"is not valid JSON ({error.msg}: line {error.lineno} column {error.colno})"
    raise DataError(
        f"{path} ({what} of a `datasets` save_to_disk folder) {problem}; save the dataset "
        "again with save_to_disk, or pass another folder."
    )


def _arrow_split_dir(root: Path, split: str) -> Path:
    """The Dataset folder of `split` in a `save_to_disk` DatasetDict (or `root`, a Dataset)."""
    if (root / "state.json").is_file():
        return root
    listing = _json_file(root / "dataset_dict.json", "the list of splits")
    splits = listing.get("splits") if isinstance(listing, dict) else None
    if not isinstance(splits, list) or not all(isinstance(name, str) for name in splits):
        raise DataError(
            f'{root / "dataset_dict.json"} has no list of split names under "splits"; save '
            "the dataset again with save_to_disk, or pass another folder."
        )
    for name in SPLIT_NAMES.get(split, (split,)):
        if name in splits:
            return root / name
    raise MissingSplit(
        f"dataset {root} has no {split} split (it has {', '.join(splits)}); pick one with --split."
    )


def _arrow_files(folder: Path) -> list[Path]:
    state = _json_file(folder / "state.json", "the split's state")
    entries = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(entry, dict) and isinstance(entry.get("filename"), str) for entry in entries
    ):
        raise DataError(
            f'{folder / "state.json"} lists no data files under "_data_files"; save the '
            "dataset again with save_to_disk, or pass another folder."
        )
    return [folder / entry["filename"] for entry in entries]


def _read_arrow(root: Path, split: str, text: str, label: str) -> _Columns:
    pyarrow, _ = _pyarrow("ipc")
    folder = _arrow_split_dir(root, split)
    tables = []
    for file in _arrow_files(folder):  # arrow stream files, in order
        try:
            with pyarrow.memory_map(str(file)) as source:
                tables.append(pyarrow.ipc.open_stream(source).read_all())
        except (pyarrow.ArrowException, OSError) as error:
            raise DataError(
                f"{file} is not a readable arrow stream ({_arrow_reason(error)}); save the dataset "
                "again with save_to_disk, or pass another folder."
            ) from None
    table = pyarrow.concat_tables(tables)
    info = _json_file(folder / "dataset_info.json", "the split's features")
    features = info.get("features") if isinstance(info, dict) else None
    columns = _table_columns(table, folder, text, label)
    names = _class_names(features if isinstance(features, dict) else {}, label)
    return _Columns(columns.texts, columns.labels, folder, names)


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


def _classes_and_indices(
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
        return _classes_and_indices([int(s) for s in strings], names, where)
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
    classes, indices = _classes_and_indices(labels, columns.names, f"{root} ({split})")
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


def _checked_texts(columns: _Columns, field: str) -> tuple[str, ...]:
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


def _checked_labels(columns: _Columns, split: str, field: str) -> list[Any]:
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
