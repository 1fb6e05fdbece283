"""Text data for language modeling: vocabulary, corpus readers, evaluation windows."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
import torch

from robench._core.errors import CheckpointError, DataError
from robench.data.text import (
    BUILTIN_TEXT,
    EOS,
    UNK,
    LanguageModelingWindows,
    TextCorpus,
    Vocabulary,
    collate_windows,
    looks_like_text_corpus,
    open_text_dataset,
    read_corpus,
    training_lines,
    words_of,
)

PYTHON_DOCS = Path("/usr/share/doc/python3.11/html/_sources")

# WikiText as released: a space before and after every line, blank lines as " ".
WIKI = {
    "train": [
        "",
        "= Valkyria Chronicles =",
        "",
        "Senjō no Valkyria 3 : <unk> Chronicles is a tactical role @-@ playing video game .",
        "The game began development in 2010 , carrying over a large portion of the work .",
        "",
        "= = Gameplay = =",
        "",
        "The game is a tactical role @-@ playing game .",
    ],
    "valid": ["", "= Tower Building =", "", "The tower is a <unk> building of 1 @,@ 200 metres ."],
    "test": [
        "",
        "= Robert Boulter =",
        "",
        "Robert Boulter is an English film , television and theatre actor .",
    ],
}


def _corpus(lines: list[list[str]]) -> TextCorpus:
    return TextCorpus(
        root=Path("."),
        layout="test",
        split="test",
        lines=tuple(tuple(line) for line in lines),
        description="hand-made",
    )


def _wikitext(root: Path, splits=("train", "valid", "test")) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for split in splits:
        text = "".join(f" {line} \n" if line else " \n" for line in WIKI[split])
        (root / f"wiki.{split}.tokens").write_text(text, encoding="utf-8")
    return root


def _text(lines: tuple[tuple[str, ...], ...]) -> str:
    return "\n".join(" ".join(line) for line in lines) + "\n"


# --- tokenize -------------------------------------------------------------------------------


def test_words_of_splits_words_and_punctuation_and_keeps_case() -> None:
    assert words_of("Don't panic: x = f(1).") == [
        "Don't", "panic", ":", "x", "=", "f", "(", "1", ")", ".",
    ]  # fmt: skip
    assert words_of("  ") == []
    assert words_of("snake_case,CamelCase") == ["snake_case", ",", "CamelCase"]


# --- vocabulary -----------------------------------------------------------------------------


def test_vocabulary_order_is_specials_then_count_then_alphabetical() -> None:
    lines = [["b", "a", "c", "a"], [], ["c", "d", "a", UNK, EOS]]
    vocab = Vocabulary.build(lines)
    assert vocab.words == (EOS, UNK, "a", "c", "b", "d")
    assert (vocab.eos_id, vocab.unk_id, len(vocab)) == (0, 1, 6)
    assert "c" in vocab and "z" not in vocab
    assert vocab.encode(["a", "z", UNK, EOS]) == [2, 1, 1, 0]
    assert vocab.decode([2, 3, 0]) == ["a", "c", EOS]


def test_vocabulary_min_count_and_max_size() -> None:
    lines = [["a", "a", "a", "b", "b", "c"]]
    assert Vocabulary.build(lines, min_count=2).words == (EOS, UNK, "a", "b")
    assert Vocabulary.build(lines, max_size=3).words == (EOS, UNK, "a")
    assert Vocabulary.build(lines, max_size=2).words == (EOS, UNK)
    assert Vocabulary.build(lines, min_count=2).encode(["c"]) == [1]
    with pytest.raises(DataError, match="min_count 0"):
        Vocabulary.build(lines, min_count=0)
    with pytest.raises(DataError, match="max_size 1"):
        Vocabulary.build(lines, max_size=1)


def test_vocabulary_sha256_is_the_compact_json_word_list() -> None:
    vocab = Vocabulary.build([["a"]])
    expected = hashlib.sha256(b'["<eos>","<unk>","a"]').hexdigest()
    assert vocab.sha256 == expected == Vocabulary((EOS, UNK, "a")).sha256
    assert Vocabulary((EOS, UNK, "b")).sha256 != expected


def test_vocabulary_metadata_round_trip_and_errors() -> None:
    vocab = Vocabulary.build([["é", "x", "x"]])
    metadata = vocab.to_metadata()
    assert list(metadata) == ["robench_vocabulary"]
    assert json.loads(metadata["robench_vocabulary"]) == {
        "format": 1,
        "words": [EOS, UNK, "x", "é"],
    }
    assert Vocabulary.from_metadata({"other": "1", **metadata}) == vocab
    assert Vocabulary.from_metadata({"other": "1"}) is None
    bad = {
        "not JSON": "{",
        "format 2": json.dumps({"format": 2, "words": [EOS, UNK]}),
        "no list of word strings": json.dumps({"format": 1, "words": [EOS, UNK, 3]}),
        "invalid vocabulary": json.dumps({"format": 1, "words": ["a"]}),
    }
    for message, raw in bad.items():
        with pytest.raises(CheckpointError, match=message):
            Vocabulary.from_metadata({"robench_vocabulary": raw})


def test_vocabulary_rejects_repeated_or_missing_words() -> None:
    with pytest.raises(ValueError, match="unique"):
        Vocabulary((EOS, UNK, "a", "a"))
    with pytest.raises(ValueError, match="must contain"):
        Vocabulary((EOS, "a"))


# --- windows --------------------------------------------------------------------------------

TWO_LINES = [["the", "cat"], ["sat"]]  # stream: the cat <eos> sat <eos> = [4, 2, 0, 3, 0]


def _items(windows: LanguageModelingWindows) -> list[tuple[list[int], list[list[int]]]]:
    return [(x.tolist(), y.tolist()) for x, y in windows]


def test_windows_by_hand_without_context() -> None:
    vocab = Vocabulary.build(TWO_LINES)
    assert vocab.words == (EOS, UNK, "cat", "sat", "the")
    windows = LanguageModelingWindows(_corpus(TWO_LINES), vocab, target_length=3)
    assert windows.spans == [(1, 4), (4, 5)]
    assert _items(windows) == [
        ([4, 2, 0], [[2, 0, 3], [1, 0, 1], [4, 0, 4]]),
        ([3], [[0], [0], [0]]),
    ]
    assert (windows.n_tokens, windows.n_scored_tokens, len(windows)) == (5, 4, 2)


def test_windows_by_hand_with_context() -> None:
    vocab = Vocabulary.build(TWO_LINES)
    windows = LanguageModelingWindows(_corpus(TWO_LINES), vocab, target_length=3, context=2)
    assert _items(windows) == [
        ([4, 2, 0], [[2, 0, 3], [1, 0, 1], [4, 0, 4]]),
        ([2, 0, 3], [[-100, -100, 0], [0, 0, 0], [0, 0, 0]]),
    ]


@pytest.mark.parametrize(
    ("target_length", "context"), [(1, 0), (1, 3), (2, 1), (3, 0), (5, 7), (256, 0), (4, 100)]
)
def test_every_position_is_scored_exactly_once(target_length: int, context: int) -> None:
    lines = [["a", "b", "c"], [], ["d", "a"], ["e"], [], ["b", "b", "c", "a"]]
    vocab = Vocabulary.build(lines[:3])
    windows = LanguageModelingWindows(
        _corpus(lines), vocab, target_length=target_length, context=context
    )
    stream = [i for line in lines for i in [*vocab.encode(line), vocab.eos_id]]
    scored: list[int] = []
    for k, (inputs, targets) in enumerate(windows):
        a, b = windows.spans[k]
        lo = max(0, a - 1 - context)
        assert inputs.tolist() == stream[lo : b - 1]
        assert targets.shape == (3, len(inputs))
        positions = [lo + 1 + j for j in range(len(inputs)) if targets[0, j] != -100]
        assert positions == list(range(a, b))
        assert [int(targets[0, j - lo - 1]) for j in positions] == stream[a:b]
        assert len(inputs) <= target_length + context
        scored += positions
    assert scored == list(range(1, len(stream)))
    last_a, last_b = windows.spans[-1]
    assert last_b - last_a == (len(stream) - 2) % target_length + 1  # the last may be short


@pytest.mark.parametrize("lines", [TWO_LINES, [[], ["a", "bé"], [], ["c"]], [["x"], [], []]])
def test_bytes_and_words_add_up_to_the_text(lines: list[list[str]]) -> None:
    vocab = Vocabulary((EOS, UNK, "a"))  # most words out of vocabulary: bytes are the originals'
    corpus = _corpus(lines)
    for target_length, context in [(1, 0), (2, 3), (256, 0)]:
        windows = LanguageModelingWindows(
            corpus, vocab, target_length=target_length, context=context
        )
        totals = sum(targets[1:].sum(dim=1) for _, targets in windows)
        first = lines[0]
        first_bytes = len(first[0].encode()) + 1 if first else 1  # the word, or the empty line's \n
        n_bytes = len(_text(corpus.lines).encode()) - first_bytes
        n_words = sum(map(len, lines)) - (1 if first else 0)
        assert totals.tolist() == [n_words, n_bytes]
        assert windows.info()["bytes"] == n_bytes and windows.info()["words"] == n_words


def test_unk_rate_separates_out_of_vocabulary_and_literal_unk() -> None:
    lines = [["a", "b", UNK, "c"], ["a"]]  # scored: b(oov) <unk>(literal) c(oov) eos a eos
    windows = LanguageModelingWindows(_corpus(lines), Vocabulary((EOS, UNK, "a")))
    assert (windows.n_out_of_vocabulary, windows.n_literal_unk) == (2, 1)
    assert windows.unk_rate == pytest.approx(3 / 6)


def test_window_attributes_and_info() -> None:
    vocab = Vocabulary.build(TWO_LINES)
    windows = LanguageModelingWindows(_corpus(TWO_LINES), vocab, target_length=3)
    assert windows.task == "language-modeling" and windows.kind == "test"
    assert windows.classes == list(vocab.words)
    assert windows.output_classes is None and windows.label_space is None
    assert windows.perturbation_summary is None
    assert "5 words" in windows.class_index_note and vocab.sha256[:12] in windows.class_index_note
    assert "2 windows" in windows.preprocessing_note
    info = windows.info()
    json.dumps(info)
    assert info["tokens"] == 5 and info["scored_tokens"] == 4 and info["windows"] == 2
    assert info["vocabulary_sha256"] == vocab.sha256 and info["lines"] == 2
    with pytest.raises(IndexError):
        windows[2]


def test_collate_pads_inputs_with_zero_and_targets_unscored() -> None:
    vocab = Vocabulary.build(TWO_LINES)
    windows = LanguageModelingWindows(_corpus(TWO_LINES), vocab, target_length=3)
    inputs, targets = collate_windows([windows[0], windows[1]])
    assert inputs.tolist() == [[4, 2, 0], [3, 0, 0]]
    assert targets.shape == (2, 3, 3)
    assert targets[1].tolist() == [[0, -100, -100], [0, 0, 0], [0, 0, 0]]
    assert inputs.dtype == targets.dtype == torch.long


def test_with_lines_keeps_windows_aligned_and_refuses_other_word_counts() -> None:
    lines = [["a", "b", "c"], [], ["d", "a"]]
    vocab = Vocabulary.build(lines)
    clean = LanguageModelingWindows(_corpus(lines), vocab, target_length=2, context=1)
    swapped = clean.with_lines([["c", "b", "a"], [], ["a", "d"]])
    assert swapped.spans == clean.spans and len(swapped) == len(clean)
    for (x0, y0), (x1, y1) in zip(clean, swapped, strict=True):
        assert x0.shape == x1.shape and torch.equal(y0[0] == -100, y1[0] == -100)
    assert swapped[0][1][0].tolist() == vocab.encode(["b"]) + vocab.encode(["a"])
    assert swapped.corpus.lines[0] == ("c", "b", "a") and clean.corpus.lines[0] == ("a", "b", "c")
    with pytest.raises(ValueError, match="line 2 has 1 words, expected 2"):
        clean.with_lines([["a", "b", "c"], [], ["d"]])
    with pytest.raises(ValueError, match="expected 3 lines"):
        clean.with_lines([["a", "b", "c"]])


def test_window_sizes_are_checked() -> None:
    vocab = Vocabulary.build(TWO_LINES)
    with pytest.raises(DataError, match="target length 0 is below 1"):
        open_text_dataset("pydoc-topics", vocab, target_length=0)
    with pytest.raises(DataError, match="context -1 is negative"):
        open_text_dataset("pydoc-topics", vocab, context=-1)


# --- readers --------------------------------------------------------------------------------


def test_wikitext_layout_reads_every_line_with_split_names(tmp_path: Path) -> None:
    root = _wikitext(tmp_path / "wikitext-2")
    assert looks_like_text_corpus(root)
    test = read_corpus(root, "test")
    assert test.layout == "wikitext" and test.split == "test" and test.root == root
    assert test.lines == (
        (),
        ("=", "Robert", "Boulter", "="),
        (),
        tuple(WIKI["test"][3].split()),
    )
    for alias in ("valid", "validation", "val", "VALID"):
        assert read_corpus(root, alias).split == "valid"
    assert read_corpus(root, "valid").lines[3][4] == UNK
    assert "@-@" in read_corpus(root, "train").lines[3]
    assert list(training_lines(root)) == list(read_corpus(root, "train").lines)


def test_open_text_dataset_on_wikitext(tmp_path: Path) -> None:
    root = _wikitext(tmp_path / "wt")
    vocab = Vocabulary.build(training_lines(root))
    windows = open_text_dataset(str(root), vocab, target_length=4)
    assert windows.kind == "wikitext" and windows.split == "test"
    lines = read_corpus(root, "test").lines
    assert windows.n_tokens == sum(len(line) + 1 for line in lines)
    assert windows.info()["bytes"] == len(_text(lines).encode()) - 1  # the first line is blank
    # Robert, Boulter (twice each), an, English, film, television, and, theatre, actor: not in
    # the train split.
    assert windows.n_out_of_vocabulary == 11 and windows.n_literal_unk == 0


def test_text_files_named_by_split(tmp_path: Path) -> None:
    root = tmp_path / "texts"
    root.mkdir()
    (root / "train.txt").write_text("Hello, world!\n\nIt's fine.\n")
    (root / "validation.txt").write_text("valid text\n")
    (root / "test").write_text("last line without newline")
    (root / "README.md").write_text("# not a split\n")
    assert looks_like_text_corpus(root)
    train = read_corpus(root, "train")
    assert train.layout == "text-files"
    assert train.lines == (("Hello", ",", "world", "!"), (), ("It's", "fine", "."))
    assert read_corpus(root, "val").lines == (("valid", "text"),)
    assert read_corpus(root, "test").lines == (("last", "line", "without", "newline"),)
    (root / "test").unlink()
    with pytest.raises(DataError, match=r"no file for split 'test'.*train\.txt"):
        read_corpus(root, "test")


def test_text_files_split_by_path_hash(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    names = [f"part{i // 10}/doc{i:03d}.txt" for i in range(100)]
    for i, name in enumerate(names):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"document {i}\n")
    (root / ".hidden.txt").write_text("never read\n")

    seen: list[str] = []
    for split in ("train", "valid", "test"):
        corpus = read_corpus(root, split)
        expected = [n for n in sorted(names) if _hash_bucket_split(n) == split]
        assert [f"part{int(w) // 10}/doc{int(w):03d}.txt" for _, w in corpus.lines] == expected
        seen += expected
    assert sorted(seen) == sorted(names)


def test_pydoc_topics_split_is_disjoint_and_complete() -> None:
    from pydoc_data.topics import topics

    assert set(BUILTIN_TEXT) == {"python-docs", "pydoc-topics"}
    keys: dict[str, list[str]] = {}
    words = 0
    for split in ("train", "valid", "test"):
        corpus = read_corpus("pydoc-topics", split)
        keys[split] = [k for k in sorted(topics) if _hash_bucket_split(k, 10) == split]
        expected = [
            tuple(words_of(line))
            for k in keys[split]
            for line in topics[k].removesuffix("\n").split("\n")
        ]
        assert list(corpus.lines) == expected
        words += corpus.n_words
    assert sorted(k for split_keys in keys.values() for k in split_keys) == sorted(topics)
    assert min(map(len, keys.values())) >= 3 and len(keys["train"]) > 0.7 * len(topics)
    assert words == sum(len(words_of(text)) for text in topics.values())


def _bucket(key: str, buckets: int) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % buckets


def test_python_docs_reads_plain_and_gzipped_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "_sources"
    names = [f"library/mod{i:02d}.rst.txt" for i in range(60)]
    for i, name in enumerate(names):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = f"Module {i}\n=========\n\n"
        if i % 2:
            (root / f"{name}.gz").write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
    monkeypatch.setenv("ROBENCH_PYTHON_DOCS_DIR", str(root))
    total = 0
    for split in ("train", "valid", "test"):
        corpus = read_corpus("python-docs", split)
        expected = [n for n in sorted(names) if _hash_bucket_split(n) == split]
        assert [int(line[1]) for line in corpus.lines[::3]] == [int(n[11:13]) for n in expected]
        total += len(expected)
    assert total == 60


def _hash_bucket_split(key: str, buckets: int = 20) -> str:
    """The documented rule: sha256(key) mod buckets, 0 -> test, 1 -> valid, else train."""
    return {0: "test", 1: "valid"}.get(_bucket(key, buckets), "train")


def test_python_docs_missing_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROBENCH_PYTHON_DOCS_DIR", str(tmp_path / "absent"))
    with pytest.raises(DataError, match=r"make data.*python3\.11-doc.*ROBENCH_PYTHON_DOCS_DIR"):
        read_corpus("python-docs", "test")


@pytest.mark.skipif(
    not PYTHON_DOCS.is_dir(), reason=f"python3.11-doc is not installed ({PYTHON_DOCS})"
)
def test_installed_python_docs_split_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROBENCH_PYTHON_DOCS_DIR", raising=False)
    words = {
        split: read_corpus("python-docs", split).n_words for split in ("train", "valid", "test")
    }
    total = sum(words.values())
    assert total > 500_000
    assert 0.02 < words["test"] / total < 0.10 and 0.02 < words["valid"] / total < 0.10


# --- errors ---------------------------------------------------------------------------------


def test_reader_errors_are_data_errors_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"does not exist.*pydoc-topics"):
        read_corpus(tmp_path / "nowhere", "test")
    file = tmp_path / "notes.txt"
    file.write_text("a\n")
    with pytest.raises(DataError, match="is a file, not a text corpus directory"):
        read_corpus(file, "test")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "data.csv").write_text("a,b\n")
    assert not looks_like_text_corpus(empty)
    with pytest.raises(
        DataError, match=r"not a text corpus robench recognises; looked for wikitext"
    ):
        read_corpus(empty, "test")
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "wiki.test.raw").write_text("a\n")
    with pytest.raises(DataError, match="character-level release"):
        read_corpus(raw, "test")
    partial = _wikitext(tmp_path / "partial", splits=("train", "valid"))
    with pytest.raises(DataError, match=r"no wiki\.test\.tokens.*wiki\.train\.tokens"):
        read_corpus(partial, "test")
    with pytest.raises(DataError, match="Did you mean 'test'"):
        read_corpus(partial, "tset")
    with pytest.raises(DataError, match="Unknown text layout 'wiki'"):
        read_corpus(partial, "train", layout="wiki")
    with pytest.raises(DataError, match="leave `layout` out of the suite"):
        read_corpus("pydoc-topics", "train", layout="wikitext")


def test_empty_split_and_image_data_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "blank"
    root.mkdir()
    (root / "train.txt").write_text("\n\n")
    with pytest.raises(DataError, match=r"split 'train' of the text-files corpus .* has no words"):
        read_corpus(root, "train")
    with pytest.raises(DataError, match="has no words"):
        list(training_lines(root))
    images = tmp_path / "fmnist"
    images.mkdir()
    (images / "t10k-images-idx3-ubyte.gz").write_bytes(b"\0\0\x08\x03")
    (images / "README.txt").write_text("Fashion-MNIST\n")
    assert not looks_like_text_corpus(images)
    with pytest.raises(DataError, match=r"holds image data .*not a text corpus"):
        read_corpus(images, "test")
    with pytest.raises(DataError, match="IDX image data, not a text corpus"):
        read_corpus(images / "t10k-images-idx3-ubyte.gz", "test")
    bad = tmp_path / "latin1"
    bad.mkdir()
    (bad / "test.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"line 1 of .* is not UTF-8"):
        read_corpus(bad, "test")
