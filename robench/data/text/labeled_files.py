"""The file formats of labelled texts, each read into its text and label columns
(`labeled_texts.read_labeled_texts` checks them and makes a `LabeledTexts`).

The layouts: docs/text-classification.md, "Layouts". A file that is not what its layout says
is one `DataError` naming the file (and line), never a library's exception.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from robench._core.errors import DataError, first_line

SPLIT_NAMES = {  # accepted split name -> the names files of that split may carry
    "train": ("train",),
    "validation": ("validation", "valid", "val", "dev"),
    "test": ("test",),
}
SPLIT_NAMES["valid"] = SPLIT_NAMES["dev"] = SPLIT_NAMES["val"] = SPLIT_NAMES["validation"]


class MissingSplit(DataError):
    """The data has no file (or arrow folder) for the asked split."""


@dataclass(frozen=True)
class ReadColumns:
    """One split's text and label columns as read, before `read_labeled_texts` checks them."""

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
) -> ReadColumns:
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
    return ReadColumns(texts, labels, path, lines=lines)


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


def _read_delimited(
    root: Path, split: str, text: str, label: str, *, suffix: str, delimiter: str
) -> ReadColumns:
    path = _split_file(root, split, suffix, _SUFFIXES[suffix])
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


def _read_jsonl(root: Path, split: str, text: str, label: str) -> ReadColumns:
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


def _table_columns(table: Any, path: Path, text: str, label: str) -> ReadColumns:
    """Columns of a pyarrow table; class names from its Hugging Face feature metadata."""
    names = list(table.column_names)
    if text not in names:
        raise DataError(
            f"{path} has no text column {text!r} (it has {', '.join(names)}); name it with "
            "--text-field."
        )
    labels = table.column(label).to_pylist() if label in names else None
    features = _hub_features((table.schema.metadata or {}).get(b"huggingface"))
    return ReadColumns(table.column(text).to_pylist(), labels, path, _class_names(features, label))


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


def _read_parquet(root: Path, split: str, text: str, label: str) -> ReadColumns:
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


def _read_arrow(root: Path, split: str, text: str, label: str) -> ReadColumns:
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
    return ReadColumns(columns.texts, columns.labels, folder, names)


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


_Reader = Callable[[Path, str, str, str], ReadColumns]
LAYOUTS: dict[str, tuple[_Reader, str]] = {  # layout -> (reader, default text field)
    "glue-tsv": (partial(_read_delimited, suffix=".tsv", delimiter="\t"), "sentence"),
    "csv": (partial(_read_delimited, suffix=".csv", delimiter=","), "text"),
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
