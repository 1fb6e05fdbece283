"""The constraints of TextAttack's recipes on `WordSpans` texts: which words may be modified and
how far a candidate may be from the original (docs/text-classification.md, "Words and
constraints").
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from robench.perturbations.text.edit_distance import levenshtein
from robench.perturbations.text.swaps import stopwords
from robench.perturbations.text.word_spans import WordSpans


@dataclass(frozen=True)
class AttackConstraints:
    """One recipe's constraints; None switches a constraint off."""

    skip_stopwords: bool = True
    min_word_length: int | None = None
    max_edit_distance: int | None = None
    max_words_perturbed: int | None = None

    def modifiable(self, text: WordSpans, modified: Collection[int]) -> list[int]:
        """The word indices the search may still modify, in order."""
        words = text.words
        blocked = stopwords() if self.skip_stopwords else frozenset()
        return [
            i
            for i, word in enumerate(words)
            if i not in modified
            and word not in blocked
            and (self.min_word_length is None or len(word) >= self.min_word_length)
        ]

    def allows(self, candidate: WordSpans, original: WordSpans) -> bool:
        """Whether a candidate text keeps within the recipe's bounds of the original."""
        limit_words = self.max_words_perturbed
        if limit_words is not None and len(candidate.changed_words(original)) > limit_words:
            return False
        if self.max_edit_distance is not None:
            limit = self.max_edit_distance
            if levenshtein(candidate.text, original.text, limit) > limit:
                return False
        return True

    def violation(self, original: str, perturbed: str) -> str | None:
        """Why `perturbed` breaks the constraints as a whole (same word count, unchanged
        stopwords and short words, the edit and word limits); None when it keeps them."""
        before, after = WordSpans.of(original), WordSpans.of(perturbed)
        if len(before.words) != len(after.words):
            return f"{perturbed!r} has {len(after.words)} words, the original {len(before.words)}"
        allowed = set(self.modifiable(before, ()))
        changed = after.changed_words(before)
        touched = [before.words[i] for i in changed if i not in allowed]
        if touched:
            return f"it changed {touched[0]!r}, a word the recipe may not modify"
        if not self.allows(after, before):
            return f"{perturbed!r} is beyond the edit or perturbed-word limit of {original!r}"
        return None
