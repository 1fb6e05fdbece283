"""Text corpora: `read_corpus(path_or_name, split)` -> `TextCorpus`, one split's lines of words.

The layouts (`TEXT_LAYOUTS`, detected in that order), the built-in corpora (`BUILTIN_TEXT`)
and their split rules: docs/text-data.md. Every line of a file is one line of the corpus,
blank lines included.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from robench._core.errors import DataError
from robench._core.registry import did_you_mean
from robench.data.builtin import BUILTIN_DATASETS  # the image datasets robench knows by name
from robench.data.text.tokenize import pretokenized_words, words_of

# Canonical split names, and the names accepted for each.
SPLITS = ("train", "valid", "test")
_SPLIT_NAMES = {
    "train": "train",
    **dict.fromkeys(("valid", "validation", "val"), "valid"),
    "test": "test",
    # Every document of a corpus whose split is a hash of file or topic names (text files,
    # the built-ins, a JSON-lines file): evaluate a folder of .txt files whole.
    "all": "all",
}

_IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".npy"}
_IDX_NAME = re.compile(r".*-idx\d-ubyte(\.gz)?", re.IGNORECASE)


@dataclass(frozen=True)
class TextCorpus:
    """One split of a text corpus, as lines of words (no `<eos>`; blank lines are `()`)."""

    # Directory (or module file, for pydoc-topics) the text was read from.
    root: Path
    # Layout or built-in name: "wikitext", "text-files", "python-docs", "pydoc-topics".
    layout: str
    # "train", "valid" or "test".
    split: str
    # Every line's words, in file order.
    lines: tuple[tuple[str, ...], ...]
    # One sentence for the report: what the text is and how the split was chosen.
    description: str

    @property
    def n_words(self) -> int:
        return sum(len(line) for line in self.lines)

    def __repr__(self) -> str:
        return (
            f"TextCorpus(layout={self.layout!r}, split={self.split!r}, root={str(self.root)!r}, "
            f"lines={len(self.lines)}, words={self.n_words})"
        )


@dataclass(frozen=True)
class TextSource:
    """One file (or topic, or JSON-lines record) of a split; `lines()` reads its text lines on
    demand, `text()` its exact text (a document, robench/data/text/documents.py)."""

    name: str
    lines: Callable[[], Iterator[str]]
    text: Callable[[], str]


def _file_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 file (gzip-compressed when named *.gz), split on "\\n" only."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                yield raw.rstrip(b"\n").decode("utf-8")
            except UnicodeDecodeError:
                raise DataError(
                    f"line {number} of {path} is not UTF-8 text; robench reads UTF-8 text "
                    "files: convert the file (e.g. `iconv -t UTF-8`) or remove it."
                ) from None


def _file_text(path: Path) -> str:
    """The whole text of a UTF-8 file (gzip-compressed when named *.gz), exactly as stored."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        raw = handle.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataError(
            f"{path} is not UTF-8 text (byte {error.start}); robench reads UTF-8 text files: "
            "convert the file (e.g. `iconv -t UTF-8`) or remove it."
        ) from None


def _file_source(name: str, path: Path) -> TextSource:
    return TextSource(name, partial(_file_lines, path), partial(_file_text, path))


def _text_source(name: str, text: str) -> TextSource:
    return TextSource(name, partial(_text_lines, text), partial(str, text))


def _text_lines(text: str) -> Iterator[str]:
    yield from text.removesuffix("\n").split("\n") if text else []


def _in_split(key: str, buckets: int, split: str) -> bool:
    """Does `key` (a relative path or topic name) belong to `split` ("all": every key)? Its
    split is sha256(key) mod `buckets`: 0 -> test, 1 -> valid, anything else -> train."""
    bucket = int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % buckets
    return split == "all" or {0: "test", 1: "valid"}.get(bucket, "train") == split


def canonical_split(split: str) -> str:
    """ "train", "valid" or "test" for a split name or alias (validation, val)."""
    try:
        return _SPLIT_NAMES[split.lower()]
    except KeyError:
        raise DataError(did_you_mean(split, list(_SPLIT_NAMES), "text split")) from None


def _wikitext_file(root: Path, split: str) -> Path:
    return root / f"wiki.{split}.tokens"


def _looks_like_wikitext(root: Path) -> bool:
    return any(_wikitext_file(root, split).is_file() for split in SPLITS)


def _no_all(root: Path, layout: str, split: str) -> None:
    if split == "all":
        raise DataError(
            f"split 'all' needs a corpus of many files or records, but {root} is a {layout} "
            "corpus with one file per split; pick train, valid or test with --split."
        )


def _wikitext_sources(root: Path, split: str, text_field: str) -> list[TextSource]:
    _no_all(root, "wikitext", split)
    path = _wikitext_file(root, split)
    if not path.is_file():
        found = [p.name for p in (_wikitext_file(root, s) for s in SPLITS) if p.is_file()]
        raise DataError(
            f"WikiText directory {root} has no {path.name} for split {split!r} (it has "
            f"{', '.join(found)}); add the file or pick a split it has with --split."
        )
    return [_file_source(path.name, path)]


def _named_split_files(root: Path) -> dict[str, list[Path]]:
    """Top-level files whose name before the first dot is a split name, by canonical split."""
    found: dict[str, list[Path]] = {}
    for path in sorted(root.iterdir()):
        split = _SPLIT_NAMES.get(path.name.partition(".")[0].lower())
        if split is not None and path.is_file():
            found.setdefault(split, []).append(path)
    return found


def _txt_files(root: Path) -> list[str]:
    """Relative paths (POSIX) of every non-hidden *.txt file under `root`, sorted."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.txt")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def _image_evidence(root: Path) -> str | None:
    """A file that shows `root` holds image data (IDX, image or .npy files), or None."""
    for path in root.rglob("*"):
        if _IDX_NAME.fullmatch(path.name) or path.suffix.lower() in _IMAGE_SUFFIXES:
            return path.relative_to(root).as_posix()
    return None


def _looks_like_text_files(root: Path) -> bool:
    named = bool(_named_split_files(root))
    return named or (bool(_txt_files(root)) and _image_evidence(root) is None)


def _text_files_sources(root: Path, split: str, text_field: str) -> list[TextSource]:
    named = _named_split_files(root)
    if named:
        _no_all(root, "text-files (named splits)", split)
        files = named.get(split, [])
        if len(files) != 1:
            problem = "no file" if not files else f"{len(files)} files ({files[0].name}, ...)"
            present = ", ".join(p.name for paths in named.values() for p in paths)
            raise DataError(
                f"text directory {root} has {problem} for split {split!r} (it has {present}); "
                f"expected exactly one file named {split}[.ext]: add or rename it, or pick "
                "another split with --split."
            )
        return [_file_source(files[0].name, files[0])]
    chosen = [rel for rel in _txt_files(root) if _in_split(rel, 20, split)]
    return [_file_source(rel, root / rel) for rel in chosen]


def _jsonl_files(root: Path) -> dict[str, Path]:
    """Top-level `SPLIT.jsonl` files of a directory, by canonical split."""
    return {
        split: path
        for split, paths in _named_split_files(root).items()
        for path in paths
        if path.suffix == ".jsonl"
    }


def _looks_like_jsonl(root: Path) -> bool:
    return root.suffix == ".jsonl" if root.is_file() else bool(_jsonl_files(root))


def _record_text(path: Path, number: int, raw: str, text_field: str) -> str:
    """The text under `text_field` of line `number` of a JSON-lines file."""
    try:
        record = json.loads(raw)
    except json.JSONDecodeError as error:
        raise DataError(
            f"line {number} of {path} is not JSON ({error.msg}); a JSON-lines corpus has one "
            'object per line, e.g. {"text": "..."}.'
        ) from None
    text = record.get(text_field) if isinstance(record, dict) else None
    if not isinstance(text, str):
        keys = ", ".join(record) if isinstance(record, dict) else type(record).__name__
        raise DataError(
            f"line {number} of {path} has no string under {text_field!r} (it has {keys}); "
            "name the key holding the text with --text-field."
        )
    return text


def _jsonl_sources(root: Path, split: str, text_field: str) -> list[TextSource]:
    """One source per record: a JSON-lines file is read whole; a directory's SPLIT.jsonl."""
    if root.is_file():
        path = root
    else:
        files = _jsonl_files(root)
        _no_all(root, "jsonl (named splits)", split)
        if split not in files:
            present = ", ".join(p.name for p in files.values())
            raise DataError(
                f"JSON-lines directory {root} has no {split}.jsonl (it has {present}); add it "
                "or pick a split it has with --split."
            )
        path = files[split]
    return [
        _text_source(f"{path.name}:{number}", _record_text(path, number, raw, text_field))
        for number, raw in enumerate(_file_lines(path), 1)
        if raw.strip()
    ]


def python_docs_root() -> Path:
    default = Path("/usr/share/doc/python3.11/html/_sources")
    root = Path(os.environ.get("ROBENCH_PYTHON_DOCS_DIR") or default)
    if not root.is_dir():
        raise DataError(
            f"built-in corpus 'python-docs' is not installed (looked in {root}); run `make data` "
            "or `apt-get install python3.11-doc`, or set ROBENCH_PYTHON_DOCS_DIR to the "
            "directory of the docs' reStructuredText sources (html/_sources)."
        )
    return root


def _python_docs_sources(root: Path, split: str, text_field: str) -> list[TextSource]:
    """Every *.txt / *.txt.gz file, keyed by its relative path without .gz, 20 hash buckets."""
    files = {
        p.relative_to(root).as_posix().removesuffix(".gz"): p
        for p in root.rglob("*")
        if p.is_file() and p.name.endswith((".txt", ".txt.gz"))
    }
    return [_file_source(rel, files[rel]) for rel in sorted(files) if _in_split(rel, 20, split)]


def _pydoc_topics_root() -> Path:
    import pydoc_data.topics

    return Path(pydoc_data.topics.__file__)


def _pydoc_topics_sources(root: Path, split: str, text_field: str) -> list[TextSource]:
    """pydoc's help topics sorted by name, 10 hash buckets over the names."""
    from pydoc_data.topics import topics

    return [_text_source(key, topics[key]) for key in sorted(topics) if _in_split(key, 10, split)]


@dataclass(frozen=True)
class TextReader:
    """How one layout or built-in corpus is read."""

    # The sources (files, topics, records) of a canonical split, in corpus order; the third
    # argument is the JSON-lines key holding the text (other layouts ignore it).
    sources: Callable[[Path, str, str], list[TextSource]]
    tokenize: Callable[[str], list[str]]
    # One line for `robench list` and error messages.
    description: str
    # Directory layouts: does ROOT look like this layout? Built-ins: where the data is.
    detect: Callable[[Path], bool] | None = None
    locate: Callable[[], Path] | None = None


# Directory layouts, tried in this order.
TEXT_LAYOUTS: dict[str, TextReader] = {
    "wikitext": TextReader(
        _wikitext_sources,
        pretokenized_words,
        "ROOT/wiki.{train,valid,test}.tokens (word-level WikiText-2/-103)",
        detect=_looks_like_wikitext,
    ),
    "jsonl": TextReader(
        _jsonl_sources,
        words_of,
        'FILE.jsonl read whole, or ROOT/{train,valid,test}.jsonl; {"text": ...} per line',
        detect=_looks_like_jsonl,
    ),
    "text-files": TextReader(
        _text_files_sources,
        words_of,
        "ROOT/{train,valid,test}[.ext] plain text, or ROOT/**/*.txt split by path hash",
        detect=_looks_like_text_files,
    ),
}

# Corpora robench knows by name.
BUILTIN_TEXT: dict[str, TextReader] = {
    "python-docs": TextReader(
        _python_docs_sources,
        words_of,
        "reStructuredText sources of the Python 3.11 docs (Debian python3.11-doc)",
        locate=python_docs_root,
    ),
    "pydoc-topics": TextReader(
        _pydoc_topics_sources,
        words_of,
        "pydoc's help topics from the standard library (pydoc_data.topics)",
        locate=_pydoc_topics_root,
    ),
}


def looks_like_text_corpus(path: str | Path) -> bool:
    """Is `path` a directory in one of the detected text layouts?"""
    root = Path(path)
    return root.is_dir() and any(
        r.detect is not None and r.detect(root) for r in TEXT_LAYOUTS.values()
    )


def resolve_corpus(path_or_name: str | Path, layout: str | None) -> tuple[Path, str, TextReader]:
    """(root, layout name, reader) for a directory or a built-in name."""
    if layout is not None and layout not in TEXT_LAYOUTS:
        raise DataError(did_you_mean(layout, list(TEXT_LAYOUTS), "text layout"))
    root = Path(path_or_name)
    if not root.exists():
        builtin = BUILTIN_TEXT.get(str(path_or_name))
        if str(path_or_name) in BUILTIN_DATASETS:
            raise DataError(
                f"{path_or_name} is image data, not a text corpus; pass a text corpus to a "
                f"language model ({', '.join(BUILTIN_TEXT)}, a WikiText directory or text files)."
            )
        if builtin is None:
            raise DataError(
                f"text data path {str(path_or_name)!r} does not exist; pass a directory "
                f"({'; '.join(r.description for r in TEXT_LAYOUTS.values())}) or a built-in "
                f"corpus ({', '.join(BUILTIN_TEXT)})."
            )
        if layout is not None:
            raise DataError(
                f"layout {layout!r} does not apply to the built-in corpus {str(path_or_name)!r}, "
                "which has its own; leave `layout` out of the suite's [datasets] table."
            )
        assert builtin.locate is not None
        return builtin.locate(), str(path_or_name), builtin
    if root.is_file() and (layout == "jsonl" or (layout is None and _looks_like_jsonl(root))):
        return root, "jsonl", TEXT_LAYOUTS["jsonl"]
    if not root.is_dir():
        kind = "IDX image data" if _IDX_NAME.fullmatch(root.name) else "a file"
        raise DataError(
            f"text data path {root} is {kind}, not a text corpus directory; pass the directory "
            "that holds wiki.{train,valid,test}.tokens or train/valid/test text files."
        )
    if layout is not None:
        return root, layout, TEXT_LAYOUTS[layout]
    for name, reader in TEXT_LAYOUTS.items():
        if reader.detect is not None and reader.detect(root):
            return root, name, reader
    images = _image_evidence(root)
    if images is not None:
        raise DataError(
            f"{root} holds image data ({images}), not a text corpus; pass a text directory "
            "or a built-in text corpus, or use an image-classification task for this data."
        )
    looked_for = "; ".join(f"{name}: {r.description}" for name, r in TEXT_LAYOUTS.items())
    raw = " (its wiki.*.raw files are the character-level release: use the .tokens one)"
    hint = raw if any(root.glob("wiki.*.raw")) else ""
    raise DataError(
        f"{root} is not a text corpus robench recognises{hint}; looked for {looked_for}: "
        "arrange the files that way or pass a built-in name."
    )


def _lines(reader: TextReader, sources: list[TextSource]) -> Iterator[tuple[str, ...]]:
    for source in sources:
        for text in source.lines():
            yield tuple(map(sys.intern, reader.tokenize(text)))


def _empty_split(root: Path, layout: str, split: str) -> DataError:
    return DataError(
        f"split {split!r} of the {layout} corpus at {root} has no words; expected text in that "
        "split: add text to it, or pick another split with --split."
    )


def read_corpus(
    path_or_name: str | Path, split: str, layout: str | None = None, text_field: str = "text"
) -> TextCorpus:
    """One split of the corpus at `path_or_name` (a directory, a JSON-lines file or a key of
    BUILTIN_TEXT); `text_field` is the key of a JSON-lines record that holds its text."""
    split = canonical_split(split)
    root, name, reader = resolve_corpus(path_or_name, layout)
    lines = tuple(_lines(reader, reader.sources(root, split, text_field)))
    if not any(lines):
        raise _empty_split(root, name, split)
    return TextCorpus(
        root=root,
        layout=name,
        split=split,
        lines=lines,
        description=f"{split} split of the {name} corpus at {root}: {reader.description}",
    )


def training_lines(
    path_or_name: str | Path, layout: str | None = None, text_field: str = "text"
) -> Iterator[tuple[str, ...]]:
    """The train split's lines of words, read lazily (for `Vocabulary.build` on large corpora)."""
    root, name, reader = resolve_corpus(path_or_name, layout)
    # A missing train file fails here, before iterating.
    sources = reader.sources(root, "train", text_field)

    def lines() -> Iterator[tuple[str, ...]]:
        seen_words = False
        for words in _lines(reader, sources):
            seen_words = seen_words or bool(words)
            yield words
        if not seen_words:
            raise _empty_split(root, name, "train")

    return lines()
