"""`LanguageModelingWindows`: the evaluation windows of a language-modeling split.

The token stream, the windows and the rows of their targets (the words and UTF-8 bytes that
word perplexity and bits per byte divide by, as lm-evaluation-harness defines them):
docs/text-data.md, "Evaluation windows".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import torch
from torch.utils.data import Dataset

from robench._core.errors import DataError
from robench.data.text.corpora import TextCorpus
from robench.data.text.vocabulary import UNK, Vocabulary

# Row 0 of the targets where a position is not scored (torch's cross-entropy ignore_index).
IGNORE_INDEX = -100


def check_window_sizes(target_length: int, context: int) -> None:
    """DataError unless target_length >= 1 and context >= 0."""
    if target_length < 1:
        raise DataError(
            f"target length {target_length} is below 1; pass the number of tokens each window "
            "scores (1 or more, e.g. 256)."
        )
    if context < 0:
        raise DataError(
            f"context {context} is negative; pass the number of unscored tokens a window may "
            "see before its scored ones (0 or more)."
        )


def _stream(
    lines: Sequence[Sequence[str]], vocabulary: Vocabulary
) -> tuple[list[int], list[int], list[int], int, int]:
    """(ids, word flags, bytes) of every stream position, and the number of out-of-vocabulary
    words and of literal `<unk>` words after position 0."""
    ids: list[int] = []
    words: list[int] = []
    nbytes: list[int] = []
    for line in lines:
        ids += vocabulary.encode(line)
        ids.append(vocabulary.eos_id)
        words += [1] * len(line)
        words.append(0)
        nbytes += [len(word.encode("utf-8")) + 1 for word in line]
        nbytes.append(0 if line else 1)
    flat = [word for line in lines for word in line]
    first = 1 if lines and lines[0] else 0  # the word at position 0 is not scored
    literal = sum(word == UNK for word in flat[first:])
    oov = sum(word not in vocabulary for word in flat[first:])
    return ids, words, nbytes, oov, literal


class LanguageModelingWindows(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """The windows of one text split (see the module docstring); batch with `collate_windows`."""

    # The task whose models this data is for (robench/tasks).
    task: str = "language-modeling"

    def __init__(
        self,
        corpus: TextCorpus,
        vocabulary: Vocabulary,
        *,
        target_length: int = 256,
        context: int = 0,
    ) -> None:
        check_window_sizes(target_length, context)
        ids, words, nbytes, oov, literal = _stream(corpus.lines, vocabulary)
        if len(ids) < 2:
            raise DataError(
                f"split {corpus.split!r} of {corpus.root} has {len(ids)} token(s); at least 2 "
                "are needed to score one: use a split with text."
            )
        # The attributes: docs/text-data.md, "What the evaluation reads".
        self.corpus = corpus
        self.vocabulary = vocabulary
        self.kind = corpus.layout
        self.root: Path = corpus.root
        self.split: str | None = corpus.split
        self.target_length = target_length
        self.context = context
        self.classes = list(vocabulary.words)
        self.class_index_note = (
            f"Token ids are positions in the checkpoint's vocabulary of {len(vocabulary):,} "
            f"words (sha256 {vocabulary.sha256[:12]})."
        )
        self.output_classes: tuple[int, ...] | None = None
        self.label_space = None
        self.perturbation_summary: dict | None = None
        # Each position's token id, word flag and bytes: the rows of a window's targets.
        self._rows = torch.tensor([ids, words, nbytes], dtype=torch.long)  # (3, N)
        n = len(ids)
        self.spans = [(a, min(a + target_length, n)) for a in range(1, n, target_length)]
        self.n_tokens = n
        self.n_scored_tokens = n - 1
        self.n_scored_words = int(self._rows[1, 1:].sum())
        self.n_scored_bytes = int(self._rows[2, 1:].sum())
        self.n_out_of_vocabulary = oov
        self.n_literal_unk = literal
        self.unk_rate = int((self._rows[0, 1:] == vocabulary.unk_id).sum()) / self.n_scored_tokens
        self.preprocessing_note = (
            f"Token stream of {n:,} tokens (words, <eos> after each line) cut into "
            f"{len(self.spans):,} windows scoring up to {target_length} tokens each after "
            f"{context} unscored context tokens, {self.n_scored_tokens:,} tokens scored (all "
            "but the first)."
        )

    def __len__(self) -> int:
        return len(self.spans)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} windows")
        a, b = self.spans[index]
        lo = max(0, a - 1 - self.context)
        inputs = self._rows[0, lo : b - 1]  # (n,)
        unscored = a - 1 - lo
        targets = self._rows[:, lo + 1 : b].clone()  # (3, n)
        targets[0, :unscored] = IGNORE_INDEX
        targets[1:, :unscored] = 0
        return inputs.clone(), targets

    def info(self) -> dict[str, object]:
        """JSON-able summary for the report."""
        return {
            "layout": self.kind,
            "split": self.split,
            "lines": len(self.corpus.lines),
            "tokens": self.n_tokens,
            "scored_tokens": self.n_scored_tokens,
            "words": self.n_scored_words,
            "bytes": self.n_scored_bytes,
            "target_length": self.target_length,
            "context": self.context,
            "windows": len(self),
            "vocabulary_size": len(self.vocabulary),
            "vocabulary_sha256": self.vocabulary.sha256,
            "unk_rate": self.unk_rate,
            "out_of_vocabulary": self.n_out_of_vocabulary,
            "literal_unk": self.n_literal_unk,
        }

    def with_lines(self, lines: Sequence[Sequence[str]]) -> LanguageModelingWindows:
        """The same windows over other words (a perturbed copy of the text): window k of the
        copy scores the same positions as window k here. ValueError unless every line keeps
        its number of words."""
        old = self.corpus.lines
        if len(lines) != len(old):
            raise ValueError(f"expected {len(old)} lines, got {len(lines)}")
        for number, (new, before) in enumerate(zip(lines, old, strict=True)):
            if len(new) != len(before):
                raise ValueError(
                    f"line {number} has {len(new)} words, expected {len(before)}: a perturbation "
                    "must keep every line's word count so windows stay aligned"
                )
        corpus = replace(self.corpus, lines=tuple(tuple(line) for line in lines))
        return LanguageModelingWindows(
            corpus, self.vocabulary, target_length=self.target_length, context=self.context
        )

    def __repr__(self) -> str:
        return (
            f"LanguageModelingWindows(layout={self.kind!r}, split={self.split!r}, "
            f"windows={len(self)}, scored_tokens={self.n_scored_tokens}, "
            f"vocabulary={len(self.vocabulary)})"
        )


def collate_windows(
    items: Sequence[tuple[torch.Tensor, torch.Tensor]],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad items to the largest in every dimension: inputs with 0, targets with -100 in
    row 0 and 0 in rows 1-2 (padding is never scored). Windows (n,), (3, n) give (B, T),
    (B, 3, T); documents (W, T), (W, 3, T) give (B, W, T), (B, W, 3, T)."""
    inputs = _zeros_for_largest([x for x, _ in items])
    targets = _zeros_for_largest([y for _, y in items])
    targets[..., 0, :] = IGNORE_INDEX
    for row, (x, y) in enumerate(items):
        inputs[row][tuple(map(slice, x.shape))] = x
        targets[row][tuple(map(slice, y.shape))] = y
    return inputs, targets


def _zeros_for_largest(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    shape = [max(sizes) for sizes in zip(*(t.shape for t in tensors), strict=True)]
    return torch.zeros(len(tensors), *shape, dtype=torch.long)
