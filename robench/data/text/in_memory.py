"""Texts held in memory (`robench.evaluate(data=[...])`) as the text tasks read them: strings as
a JSON-lines file of the same texts, `(text, label)` pairs as a labelled file (docs/python-api.md,
"Data").
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from robench._core.errors import DataError
from robench.data.in_memory import KIND, InMemory
from robench.data.text.corpora import TextCorpus
from robench.data.text.documents import DocumentCorpus
from robench.data.text.labeled_texts import LabeledTexts, classes_and_indices
from robench.data.text.tokenize import words_of

_SPLIT = "test"  # what the report says of data that has no split


def _texts(data: InMemory) -> list[str]:
    texts = list(data.items)  # type: ignore[arg-type]
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise DataError(
                f"item {index} of {data.name} is a {type(text).__name__}; a language model is "
                "evaluated on a list of strings (one document each)."
            )
    return texts


def documents(data: InMemory) -> DocumentCorpus:
    """The non-empty texts as documents (a subword model's samples)."""
    kept = [(f"text {i}", text) for i, text in enumerate(_texts(data)) if text.strip()]
    if not kept:
        raise DataError(f"{data.name} has no text; pass a list of non-empty strings.")
    names, texts = zip(*kept, strict=True)
    return DocumentCorpus(
        root=data.root,
        layout=KIND,
        split=_SPLIT,
        names=tuple(names),
        texts=tuple(texts),
        description=f"{len(texts)} texts held in memory ({data.name})",
    )


def corpus(data: InMemory) -> TextCorpus:
    """The texts' lines as words (a word-level model's stream)."""
    lines = tuple(
        tuple(map(sys.intern, words_of(line)))
        for text in _texts(data)
        if text.strip()
        for line in text.removesuffix("\n").split("\n")
    )
    if not any(lines):
        raise DataError(f"{data.name} has no words; pass a list of non-empty strings.")
    return TextCorpus(
        root=data.root,
        layout=KIND,
        split=_SPLIT,
        lines=lines,
        description=f"texts held in memory ({data.name})",
    )


def labeled_texts(data: InMemory) -> LabeledTexts:
    """`(text, label)` items as a labelled split."""
    texts: list[str] = []
    labels: list[Any] = []
    for index in range(len(data)):
        text, label = data.item(index)
        if not isinstance(text, str):
            raise DataError(
                f"item {index} of {data.name} holds a {type(text).__name__} where the text "
                "goes; a text classifier is evaluated on (text, label) pairs."
            )
        texts.append(text)
        labels.append(label.item() if hasattr(label, "item") else label)
    classes, indices = classes_and_indices(labels, data.classes, data.name)
    return LabeledTexts(tuple(texts), indices, classes, Path(data.root), KIND, _SPLIT)
