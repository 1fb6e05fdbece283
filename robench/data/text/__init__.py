"""Text data for the language-modeling task: `open_text_dataset(path_or_name, vocabulary)` ->
`LanguageModelingWindows` (docs/text-data.md).
"""

from __future__ import annotations

from pathlib import Path

from robench.data.text.corpora import (
    BUILTIN_TEXT,
    SPLITS,
    TEXT_LAYOUTS,
    TextCorpus,
    looks_like_text_corpus,
    read_corpus,
    training_lines,
)
from robench.data.text.tokenize import words_of
from robench.data.text.vocabulary import EOS, UNK, Vocabulary
from robench.data.text.windows import (
    IGNORE_INDEX,
    LanguageModelingWindows,
    check_window_sizes,
    collate_windows,
)

__all__ = [
    "BUILTIN_TEXT",
    "EOS",
    "IGNORE_INDEX",
    "SPLITS",
    "TEXT_LAYOUTS",
    "UNK",
    "LanguageModelingWindows",
    "TextCorpus",
    "Vocabulary",
    "collate_windows",
    "looks_like_text_corpus",
    "open_text_dataset",
    "read_corpus",
    "training_lines",
    "words_of",
]


def open_text_dataset(
    path_or_name: str | Path,
    vocabulary: Vocabulary,
    *,
    split: str = "test",
    target_length: int = 256,
    context: int = 0,
    layout: str | None = None,
    text_field: str = "text",
) -> LanguageModelingWindows:
    """The evaluation windows of `split` of the corpus at `path_or_name` (a directory, read as
    its detected layout or as `layout`, or a key of BUILTIN_TEXT), encoded with `vocabulary`."""
    check_window_sizes(target_length, context)
    corpus = read_corpus(path_or_name, split, layout, text_field)
    return LanguageModelingWindows(corpus, vocabulary, target_length=target_length, context=context)
