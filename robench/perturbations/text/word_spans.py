"""A text as TextAttack's attacks see it: its words (TextAttack's `words_from_text`, the rule in
docs/text-classification.md, "Words and constraints"), where they are, and one word replaced,
leaving the rest of the text (spacing, punctuation) as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"[\w'\-_*@]+")
_EDGES = "'-_*@"


def word_spans(text: str) -> tuple[tuple[int, int], ...]:
    """(start, end) of every word of `text`, in order."""
    spans = []
    for piece in re.finditer(r"\S+", text):
        for match in _WORD.finditer(piece.group()):
            word = match.group()
            left = len(word) - len(word.lstrip(_EDGES))
            right = len(word) - len(word.rstrip(_EDGES))
            if left + right < len(word):  # not only edge characters
                start = piece.start() + match.start()
                spans.append((start + left, start + len(word) - right))
    return tuple(spans)


@dataclass(frozen=True)
class WordSpans:
    """A text and its words (TextAttack's word splitting), with the character spans."""

    text: str
    spans: tuple[tuple[int, int], ...]

    @classmethod
    def of(cls, text: str) -> WordSpans:
        return cls(text, word_spans(text))

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.text[start:end] for start, end in self.spans)

    def replace(self, index: int, word: str) -> WordSpans:
        """The text with word `index` replaced by `word` (one word: same word count)."""
        start, end = self.spans[index]
        shift = len(word) - (end - start)
        text = self.text[:start] + word + self.text[end:]
        after = ((s + shift, e + shift) for s, e in self.spans[index + 1 :])
        spans = (*self.spans[:index], (start, start + len(word)), *after)
        return WordSpans(text, spans)

    def changed_words(self, other: WordSpans) -> tuple[int, ...]:
        """Indices of the words that differ from `other`'s (TextAttack's `all_words_diff`)."""
        return tuple(
            i for i, (a, b) in enumerate(zip(self.words, other.words, strict=True)) if a != b
        )
