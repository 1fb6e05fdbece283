"""Hostile labelled-text data (issue 39): each is refused in one sentence naming the file and
the fix, exit 2, before anything is written; none is evaluated as if it were fine."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import refused

from robench._core.errors import DataError
from robench.data.text.labeled_texts import read_labeled_texts

MODEL = "text_classifier_nano_elliptical_docs"  # classes: the Python docs' parts
GOOD = {"text": "how to extend python with c modules", "label": "extending"}


def _jsonl(*records: object) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def _write(name: str, content: str | bytes) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        path = root / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return build


def _image_folder(root: Path) -> Path:
    from PIL import Image

    (root / "images" / "0").mkdir(parents=True)
    Image.new("L", (28, 28)).save(root / "images" / "0" / "a.png")
    return root / "images"


def _cut_off_dataset_dict(root: Path) -> Path:
    (root / "saved").mkdir()
    (root / "saved" / "dataset_dict.json").write_text('{"splits": ["te', encoding="utf-8")
    return root / "saved"


# (name, builder of the bad data, what the one sentence must say), as the issue lists them.
EVALUATED = [
    ("missing text field", _write("a.jsonl", _jsonl(GOOD, {"label": "faq"})), "line 2 of"),
    ("text is a number", _write("a.jsonl", _jsonl({"text": 42, "label": "faq"}, GOOD)), "int"),
    ("all texts empty", _write("a.csv", 'text,label\n,faq\n"",extending\n'), "is empty"),
    ("latin-1", _write("a.csv", "text,label\ncafé crème,faq\n".encode("latin-1")), "UTF-8"),
    ("10 MB line", _write("a.csv", "text,label\n" + "word " * 2_000_000 + ",faq\n"), "limit"),
    ("random bytes", _write("a.parquet", os.urandom(2048)), "not a readable parquet file"),
    ("cut-off dataset_dict", _cut_off_dataset_dict, "dataset_dict.json"),
    ("header, no rows", _write("a.csv", "text,label\n"), "holds no texts"),
    ("image folder", _image_folder, "cannot tell the layout"),
]


@pytest.mark.parametrize(("build", "expected"), [case[1:] for case in EVALUATED],
                         ids=[case[0] for case in EVALUATED])  # fmt: skip
def test_eval_refuses_hostile_text_data(
    tmp_path: Path, build: Callable[[Path], Path], expected: str
) -> None:
    data = build(tmp_path)
    out = tmp_path / "runs" / "r.json"
    args = ["eval", MODEL, "-s", "text-classification-smoke", "-d", data, "-o", out]
    line = refused([*args, "--limit", "1"], tmp_path, expected, data.name)
    assert "--layout" not in line  # eval has no such flag


SIBLINGS = [
    ("missing label", _write("a.jsonl", _jsonl(GOOD, {"text": "faq"})), "line 2 of .* no label"),
    ("label is a list", _write("a.jsonl", _jsonl({"text": "x", "label": [1]})), "list"),
    ("label is 0.5", _write("a.jsonl", _jsonl({"text": "x", "label": 0.5})), "float '0.5'"),
    ("text is null", _write("a.jsonl", _jsonl(GOOD, {"text": None, "label": 1})), "line 2 of"),
    ("text is a list", _write("a.jsonl", _jsonl({"text": ["a"], "label": 1})), "list"),
    ("short csv row", _write("a.csv", "label,text\nfaq,a text\nfaq\n"), "line 3 of .* no text"),
    ("unquoted comma", _write("a.csv", "text,label\nhello, world,faq\n"), "3 fields"),
    ("stray quote", _write("a.csv", 'text,label\n"a\nb,faq'), "cannot be read as CSV"),
    ("latin-1 jsonl", _write("a.jsonl", b'{"text": "caf\xe9", "label": 1}\n'), "not UTF-8"),
    ("latin-1 tsv", _write("a.tsv", b"sentence\tlabel\ncaf\xe9\t1\n"), "line 2 of .* UTF-8"),
    ("empty jsonl", _write("a.jsonl", ""), "holds no texts"),
    ("blank texts", _write("a.jsonl", _jsonl({"text": "  ", "label": 1})), "is empty"),
    ("no labels", _write("a.csv", "text\nsome text\n"), "no labels under 'label'"),
]


@pytest.mark.parametrize(("build", "pattern"), [case[1:] for case in SIBLINGS],
                         ids=[case[0] for case in SIBLINGS])  # fmt: skip
def test_the_reader_refuses_siblings(
    tmp_path: Path, build: Callable[[Path], Path], pattern: str
) -> None:
    path = build(tmp_path)
    with pytest.raises(DataError, match=pattern) as caught:
        read_labeled_texts(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes("text,label\nsome text,faq\n".encode("utf-8-sig"))
    assert read_labeled_texts(path).texts == ("some text",)


def test_whole_number_floats_and_booleans_are_labels(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(_jsonl({"text": "a", "label": 1.0}, {"text": "b", "label": 0.0}))
    assert read_labeled_texts(path).labels == (1, 0)
    path.write_text(_jsonl({"text": "a", "label": True}, {"text": "b", "label": False}))
    data = read_labeled_texts(path)
    assert data.classes == ("False", "True") and data.labels == (1, 0)


def test_broken_save_to_disk_folders(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    split = datasets.Dataset.from_dict({"text": ["a b", "c d"], "label": [0, 1]})
    datasets.DatasetDict({"test": split}).save_to_disk(str(tmp_path / "dd"))
    (tmp_path / "dd" / "test" / "state.json").write_text("{", encoding="utf-8")
    with pytest.raises(DataError, match=r"state.json .* is not valid JSON"):
        read_labeled_texts(tmp_path / "dd")
    (tmp_path / "dd" / "test" / "state.json").unlink()
    with pytest.raises(DataError, match=r"state.json .* is missing"):
        read_labeled_texts(tmp_path / "dd")
    (tmp_path / "dd" / "dataset_dict.json").write_text('{"splits": 3}', encoding="utf-8")
    with pytest.raises(DataError, match="no list of split names"):
        read_labeled_texts(tmp_path / "dd")
    split.save_to_disk(str(tmp_path / "one"))
    for arrow in (tmp_path / "one").glob("*.arrow"):
        arrow.write_bytes(os.urandom(512))
    with pytest.raises(DataError, match="is not a readable arrow stream"):
        read_labeled_texts(tmp_path / "one")


def test_parquet_with_a_number_column_as_text(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    from pyarrow import parquet

    table = pyarrow.table({"text": [1, 2], "label": [0, 1]})
    parquet.write_table(table, tmp_path / "a.parquet")
    with pytest.raises(DataError, match=r"row 1 of .*a.parquet has int '1' under 'text'"):
        read_labeled_texts(tmp_path / "a.parquet")


def test_a_split_name_that_is_none_is_refused_for_one_file(tmp_path: Path) -> None:
    path = _write("a.jsonl", _jsonl(GOOD))(tmp_path)
    with pytest.raises(DataError, match=r"a.jsonl is one file, .* --split trian is no split"):
        read_labeled_texts(path, "trian")
    assert read_labeled_texts(path, "test").texts == (GOOD["text"],)  # read whole
