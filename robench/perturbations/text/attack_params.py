"""The text attack kinds' parameters (`deepwordbug`, `pruthi`, `pwws`; recipes.py), validated
without torch; the constraints default to the recipe's (docs/text-classification.md)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from robench.perturbations.base import FORWARD_PASS, PerturbationParams, register_kind

_IMPLEMENTATION = "robench.perturbations.text.word_attack:WordAttack"
_UNBUDGETED_QUERIES = 1000  # the cost bound of an attack without a query budget


class TextAttackParams(PerturbationParams):
    """What every text attack recipe takes."""

    unbounded: ClassVar[bool] = True  # bounded by its constraints, not by an eps-ball
    task: ClassVar[str | tuple[str, ...] | None] = "text-classification"
    # What each sample's attack did, kept per sample in the report (word_attack.py).
    columns: ClassVar[tuple[str, ...]] = ("outcome", "queries", "changed_words", "words", "text")
    recipe: ClassVar[str]
    # The fields that are `AttackConstraints` options of the recipe.
    constraint_fields: ClassVar[tuple[str, ...]] = ("skip_stopwords",)

    # Model queries per sample, the clean one included (TextAttack's); None: no limit.
    query_budget: int | None = Field(default=None, ge=1)
    # Texts per model call while searching: speed only, the results do not depend on it.
    query_batch: int = Field(default=256, ge=1)
    # Never modify an English stopword (NLTK's list, as written), as every recipe does.
    skip_stopwords: bool = True

    def passes_per_sample(self, classes: int = 10) -> int:
        return FORWARD_PASS * ((self.query_budget or _UNBUDGETED_QUERIES) + 1)

    def constraint_options(self) -> dict[str, int | bool | None]:
        """The recipe's constraints as `AttackConstraints` keyword arguments."""
        return {name: getattr(self, name) for name in self.constraint_fields}


@register_kind("deepwordbug", _IMPLEMENTATION)
class DeepWordBugParams(TextAttackParams):
    """DeepWordBug (Gao et al. 2018): one character edit per word, greedy by deletion."""

    recipe: ClassVar[str] = "deepwordbug"
    display: ClassVar[str | None] = "DeepWordBug"
    constraint_fields = ("skip_stopwords", "max_edit_distance")
    # Character edit distance of the whole text to the original (the recipe's 30).
    max_edit_distance: int = Field(default=30, ge=1)


@register_kind("pruthi", _IMPLEMENTATION)
class PruthiParams(TextAttackParams):
    """Pruthi et al. (2019): one typo in one word of at least 4 characters."""

    recipe: ClassVar[str] = "pruthi"
    display: ClassVar[str | None] = "Pruthi"
    constraint_fields = ("skip_stopwords", "max_words_perturbed", "min_word_length")
    max_words_perturbed: int = Field(default=1, ge=1)
    min_word_length: int = Field(default=4, ge=1)


@register_kind("pwws", _IMPLEMENTATION)
class PWWSParams(TextAttackParams):
    """PWWS (Ren et al. 2019): WordNet synonyms, words ranked by weighted saliency."""

    recipe: ClassVar[str] = "pwws"
    display: ClassVar[str | None] = "PWWS"
    modules: ClassVar[dict[str, str]] = {"nltk": "PWWS (WordNet synonyms, read with nltk)"}
