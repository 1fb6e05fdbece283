"""Text-classification data: GLUE SST-2 TSV, CSV, JSON lines, parquet and `save_to_disk`
folders, each written here in its released layout, and the built-in Python-docs sections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robench._core.errors import DataError
from robench.data.text.corpora import python_docs_root
from robench.data.text.docs_sections import DOCS_SECTIONS, paragraphs, section_files
from robench.data.text.labeled_texts import detect_layout, read_labeled_texts

SENTENCES = ["a gripping , funny film ", 'the "plot" is thin', "it 's a dud", "warm and wise"]
LABELS = [1, 0, 0, 1]


def _glue_sst2(root: Path) -> Path:
    root.mkdir()
    rows = "".join(f"{s}\t{y}\n" for s, y in zip(SENTENCES, LABELS, strict=True))
    (root / "train.tsv").write_text("sentence\tlabel\n" + rows)
    (root / "dev.tsv").write_text("sentence\tlabel\n" + rows)
    test = "".join(f"{i}\t{s}\n" for i, s in enumerate(SENTENCES))
    (root / "test.tsv").write_text("index\tsentence\n" + test)
    return root


def test_glue_sst2_reads_dev_by_default_with_unquoted_sentences(tmp_path: Path) -> None:
    data = read_labeled_texts(_glue_sst2(tmp_path / "SST-2"))
    assert data.layout == "glue-tsv" and data.split == "validation"
    assert data.texts == tuple(SENTENCES) and data.labels == tuple(LABELS)
    assert data.classes == ("0", "1") and data[1] == ('the "plot" is thin', 0)
    with pytest.raises(DataError, match=r"no labels under 'label'.*--split validation"):
        read_labeled_texts(tmp_path / "SST-2", "test")


def test_csv_and_jsonl_take_named_fields_and_string_labels(tmp_path: Path) -> None:
    (tmp_path / "reviews.csv").write_text(
        "review,stars\n" + "".join(f'"{s.replace(chr(34), 2 * chr(34))}",{"pos" if y else "neg"}\n'
                                   for s, y in zip(SENTENCES, LABELS, strict=True))
    )  # fmt: skip
    data = read_labeled_texts(tmp_path / "reviews.csv", text_field="review", label_field="stars")
    assert data.texts == tuple(SENTENCES) and data.classes == ("neg", "pos")
    assert data.labels == tuple(LABELS)
    folder = tmp_path / "jl"
    folder.mkdir()
    lines = [json.dumps({"text": s, "label": y}) for s, y in zip(SENTENCES, LABELS, strict=True)]
    (folder / "test.jsonl").write_text("\n".join(lines) + "\n")
    data = read_labeled_texts(folder)
    assert data.layout == "jsonl" and data.labels == tuple(LABELS) and data.classes == ("0", "1")
    with pytest.raises(DataError, match=r"no text column 'sentence' .*text, label.*--text-field"):
        read_labeled_texts(folder, text_field="sentence")
    with pytest.raises(DataError, match="no train split"):
        read_labeled_texts(folder, "train")


def test_save_to_disk_and_hub_parquet_keep_class_label_names(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    features = datasets.Features(
        {
            "sentence": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["negative", "positive"]),
        }
    )
    split = datasets.Dataset.from_dict({"sentence": SENTENCES, "label": LABELS}, features=features)
    unlabelled = datasets.Dataset.from_dict(
        {"sentence": SENTENCES, "label": [-1] * 4}, features=features
    )
    dd = datasets.DatasetDict({"validation": split, "test": unlabelled})
    dd.save_to_disk(str(tmp_path / "sst2"))
    assert detect_layout(tmp_path / "sst2") == "arrow"
    data = read_labeled_texts(tmp_path / "sst2", "validation", text_field="sentence")
    assert data.classes == ("negative", "positive") and data.texts == tuple(SENTENCES)
    assert data.labels == tuple(LABELS)
    with pytest.raises(DataError, match=r"negative labels.*--split validation"):
        read_labeled_texts(tmp_path / "sst2", text_field="sentence")
    hub = tmp_path / "hub" / "data"
    hub.mkdir(parents=True)
    split.to_parquet(str(hub / "validation-00000-of-00001.parquet"))
    data = read_labeled_texts(tmp_path / "hub", "validation", text_field="sentence")
    assert data.layout == "parquet" and data.classes == ("negative", "positive")
    assert data.labels == tuple(LABELS)


def test_missing_data_and_unknown_layouts_are_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        read_labeled_texts(tmp_path / "nope.tsv")
    (tmp_path / "notes.md").write_text("hello")
    with pytest.raises(DataError, match=r"cannot tell the layout.*pass such data with --data"):
        read_labeled_texts(tmp_path / "notes.md")


def test_docs_paragraphs_drop_code_directives_and_titles_and_strip_roles() -> None:
    text = (
        "Title\n=====\n\n"
        "Use :func:`len` or :meth:`list.sort <list.sort>` and ``x + 1`` to count the many items "
        "of a list quickly.\n\n"
        ".. note::\n\n   indented directive content with enough words to pass the limit here\n\n"
        "   code block that is indented and long enough to be counted as prose otherwise\n\n"
        "Too short.\n"
    )
    assert paragraphs(text) == [
        "Use len or list.sort and x + 1 to count the many items of a list quickly."
    ]


def test_docs_sections_split_whole_files_every_fifth_by_hash() -> None:
    root = python_docs_root()  # the Python docs of `make data`
    train, test = section_files(root, "train"), section_files(root, "test")
    assert tuple(train) == DOCS_SECTIONS
    for section in DOCS_SECTIONS:
        assert not set(train[section]) & set(test[section])  # a file is on one side only
        assert len(test[section]) == -(-(len(train[section]) + len(test[section])) // 5)
    data = read_labeled_texts("python-docs-sections")
    assert data.split == "test" and data.classes == DOCS_SECTIONS
    assert set(data.labels) == set(range(len(DOCS_SECTIONS)))  # every part has test paragraphs
