"""`DocumentWindows`: documents scored with a model's own tokenizer by rolling windows.

One sample is one document, encoded and windowed exactly as lm-evaluation-harness 0.4.13's
`loglikelihood_rolling` does (docs/language-models.md, "Rolling windows, exactly as
lm-evaluation-harness"). Item d is `(inputs (W, T), targets (W, 3, T))`, the document's W
windows right-padded to its longest, target rows as in robench/data/text/windows.py, except
that rows 1 and 2 hold the document's words and bytes once, at its first scored position.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset

from robench.data.text.documents import DocumentCorpus
from robench.data.text.windows import IGNORE_INDEX, collate_windows

_WHITESPACE = re.compile(r"\s+")


def count_words(text: str) -> int:
    """lm-evaluation-harness's word count of a document (`Task.count_words`)."""
    return len(_WHITESPACE.split(text))


def prefix_token_id(tokenizer: Any) -> int:
    """The token the first token of a document is predicted from: BOS, else EOS (lm-eval's
    HFLM.prefix_token_id)."""
    bos = tokenizer.bos_token_id
    return int(bos if bos is not None else tokenizer.eos_token_id)


def encode_documents(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text as lm-eval's HFLM.tok_encode gives them, in one batched call."""
    prefix = tokenizer.decode(prefix_token_id(tokenizer))
    plain = [i for i, text in enumerate(texts) if not text.startswith(prefix)]
    ids: list[list[int]] = [[] for _ in texts]
    # verbose=False: documents longer than the model are expected (they are windowed).
    encoded = tokenizer([texts[i] for i in plain], verbose=False)["input_ids"] if plain else []
    for i, row in zip(plain, encoded, strict=True):
        ids[i] = list(row)
    for i in sorted(set(range(len(texts))) - set(plain)):
        ids[i] = list(tokenizer.encode(texts[i], add_special_tokens=False))
    return ids


def rolling_spans(n_tokens: int, max_length: int) -> list[tuple[int, int, int]]:
    """(lo, a, b) of each window over the stream [prefix] + ids: inputs s[lo : b-1], scored
    positions [a, b) (see the module docstring)."""
    ends = [(a, min(a + max_length, n_tokens + 1)) for a in range(1, n_tokens + 1, max_length)]
    return [(max(0, b - 1 - max_length), a, b) for a, b in ends]


class DocumentWindows(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """The documents of one split, tokenized and windowed (see the module docstring); batch
    with `collate_documents`."""

    # The task whose models this data is for (robench/tasks).
    task: str = "language-modeling"

    def __init__(self, corpus: DocumentCorpus, tokenizer: Any, max_length: int) -> None:
        self.corpus = corpus
        self.tokenizer = tokenizer
        self.max_length = max_length
        # Word Swap reads these: a subword model has no word vocabulary to check the token in.
        self.vocabulary = None
        self.kind = corpus.layout
        self.root: Path = corpus.root
        self.split: str | None = corpus.split
        self.classes: list[str] = []  # next-token classes are the tokenizer's, not listed
        self.class_index_note = (
            f"Token ids are those of the model's tokenizer ({type(tokenizer).__name__}, "
            f"{len(tokenizer):,} tokens)."
        )
        self.output_classes: tuple[int, ...] | None = None
        self.label_space = None
        self.perturbation_summary: dict | None = None
        self._prefix = prefix_token_id(tokenizer)
        self._ids = encode_documents(tokenizer, corpus.texts)
        self._words = [count_words(text) for text in corpus.texts]
        self._bytes = [len(text.encode("utf-8")) for text in corpus.texts]
        self.n_tokens = sum(map(len, self._ids))
        self.n_windows = sum(len(rolling_spans(len(ids), max_length)) for ids in self._ids)
        self.preprocessing_note = (
            f"{len(self):,} documents tokenized by the model's tokenizer into {self.n_tokens:,} "
            f"tokens, scored by {self.n_windows:,} rolling windows of up to {max_length} tokens "
            "(lm-evaluation-harness's loglikelihood_rolling), every token scored once."
        )

    def __len__(self) -> int:
        return len(self._ids)

    def relative_paths(self) -> list[str]:
        """Each document's name (a file, a record FILE:LINE, an article title, a topic)."""
        return list(self.corpus.names)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        stream = torch.tensor([self._prefix, *self._ids[index]], dtype=torch.long)  # (N+1,)
        spans = rolling_spans(len(stream) - 1, self.max_length)
        longest = max((b - 1 - lo for lo, _, b in spans), default=1)
        inputs = torch.zeros(max(len(spans), 1), longest, dtype=torch.long)  # (W, T)
        targets = torch.zeros(max(len(spans), 1), 3, longest, dtype=torch.long)  # (W, 3, T)
        targets[:, 0] = IGNORE_INDEX
        for row, (lo, a, b) in enumerate(spans):
            inputs[row, : b - 1 - lo] = stream[lo : b - 1]
            targets[row, 0, a - 1 - lo : b - 1 - lo] = stream[a:b]
        if spans:
            first = spans[0][1] - 1 - spans[0][0]  # the first scored position of window 0
            targets[0, 1, first] = self._words[index]
            targets[0, 2, first] = self._bytes[index]
        return inputs, targets

    def info(self) -> dict[str, object]:
        """JSON-able summary for the report."""
        return {
            "layout": self.kind,
            "split": self.split,
            "documents": len(self),
            "tokens": self.n_tokens,
            "scored_tokens": self.n_tokens,
            "words": sum(self._words),
            "bytes": sum(self._bytes),
            "max_length": self.max_length,
            "windows": self.n_windows,
            "tokenizer": type(self.tokenizer).__name__,
            "tokenizer_size": len(self.tokenizer),
            "prefix_token_id": self._prefix,
        }

    def with_lines(self, lines: Sequence[Sequence[str]]) -> DocumentWindows:
        """The same documents with other words in their words' places (Word Swap): document
        d of the copy is document d here. ValueError unless every line keeps its words."""
        return DocumentWindows(self.corpus.with_lines(lines), self.tokenizer, self.max_length)

    def __repr__(self) -> str:
        return (
            f"DocumentWindows(layout={self.kind!r}, split={self.split!r}, documents={len(self)}, "
            f"tokens={self.n_tokens}, max_length={self.max_length})"
        )


# Documents pad as windows do, in one more dimension.
collate_documents = collate_windows
