"""Documents: a corpus split as whole texts, the unit a subword language model is scored on.

`read_documents(path_or_name, split)` -> `DocumentCorpus`. What one document is per source,
and how Word Swap writes words back in place: docs/text-data.md, "Documents".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from robench._core.errors import DataError
from robench.data.text.corpora import TextSource, canonical_split, resolve_corpus
from robench.data.text.tokenize import WORD_PATTERN

# A WikiText article starts at a top-level heading line (" = Title = "; sections are " = = ").
_WIKITEXT_HEADING = re.compile(r"^ = [^=].* = $")
# Words of pre-tokenised text (WikiText): whitespace-separated.
_WHITESPACE_WORD = re.compile(r"\S+")
# The pattern whose matches are a layout's words (the rest of the text is left alone).
_WORD_PATTERNS: dict[str, re.Pattern[str]] = {"wikitext": _WHITESPACE_WORD}


def _wikitext_articles(sources: list[TextSource]) -> list[tuple[str, str]]:
    """(title, text) of each article of a WikiText file; lines before the first heading join
    the first article."""
    articles: list[tuple[str, list[str]]] = [("", [])]
    for source in sources:
        for line in source.lines():
            if _WIKITEXT_HEADING.match(line):
                if any(text.strip() for text in articles[-1][1]):
                    articles.append((line.strip(" ="), []))
                else:  # only blank lines so far: they open this article
                    articles[-1] = (line.strip(" ="), articles[-1][1])
            articles[-1][1].append(line)
    return [(title, "\n".join(lines) + "\n") for title, lines in articles]


def _one_per_source(sources: list[TextSource]) -> list[tuple[str, str]]:
    return [(source.name, source.text()) for source in sources]


# Layouts whose sources are not one document each.
_DOCUMENT_SPLITTERS = {"wikitext": _wikitext_articles}


@dataclass(frozen=True)
class DocumentCorpus:
    """One split of a corpus as documents (see the module docstring)."""

    # Directory or file the text was read from.
    root: Path
    # Layout or built-in name ("jsonl", "text-files", "wikitext", "python-docs", ...).
    layout: str
    # "train", "valid", "test" or "all".
    split: str
    # Each document's name (file, record "FILE:LINE", article title, topic) and exact text.
    names: tuple[str, ...]
    texts: tuple[str, ...]
    # One sentence for the report: what the text is and what a document is.
    description: str

    @property
    def word_pattern(self) -> re.Pattern[str]:
        return _WORD_PATTERNS.get(self.layout, WORD_PATTERN)

    @cached_property
    def _line_texts(self) -> tuple[str, ...]:
        return tuple(line for text in self.texts for line in text.split("\n"))

    @cached_property
    def lines(self) -> tuple[tuple[str, ...], ...]:
        """Every document's lines (split on "\\n"), in order, as words."""
        findall = self.word_pattern.findall
        return tuple(tuple(findall(line)) for line in self._line_texts)

    def with_lines(self, lines: Sequence[Sequence[str]]) -> DocumentCorpus:
        """The documents with other words in their words' places (a perturbed copy). ValueError
        unless every line keeps its number of words."""
        if len(lines) != len(self._line_texts):
            raise ValueError(f"expected {len(self._line_texts)} lines, got {len(lines)}")
        written = iter(map(self._rewrite, self._line_texts, lines, range(len(lines))))
        texts = tuple(
            "\n".join(next(written) for _ in range(text.count("\n") + 1)) for text in self.texts
        )
        return replace(self, texts=texts)

    def _rewrite(self, line: str, words: Sequence[str], number: int) -> str:
        found = len(self.word_pattern.findall(line))
        if found != len(words):
            raise ValueError(
                f"line {number} has {len(words)} words, expected {found}: a perturbation "
                "must keep every line's word count"
            )
        replacements = iter(words)  # each match, left to right, by the next word
        return self.word_pattern.sub(lambda _: next(replacements), line)


def read_documents(
    path_or_name: str | Path, split: str, layout: str | None = None, text_field: str = "text"
) -> DocumentCorpus:
    """The documents of `split` of the corpus at `path_or_name` (a directory, a JSON-lines
    file or a built-in name); empty documents are left out (they have nothing to score)."""
    split = canonical_split(split)
    root, name, reader = resolve_corpus(path_or_name, layout)
    sources = reader.sources(root, split, text_field)
    documents = [
        (title, text)
        for title, text in _DOCUMENT_SPLITTERS.get(name, _one_per_source)(sources)
        if text.strip()
    ]
    if not documents:
        raise DataError(
            f"split {split!r} of the {name} corpus at {root} has no document with text; "
            "add text to it, or pick another split with --split."
        )
    names, texts = zip(*documents, strict=True)
    return DocumentCorpus(
        root=root,
        layout=name,
        split=split,
        names=tuple(names),
        texts=tuple(texts),
        description=f"{split} split of the {name} corpus at {root}: {reader.description}",
    )
