"""TextAttack's attack recipes as robench builds them: transformation, constraints, search.

- `deepwordbug` (Gao et al. 2018): swap, substitute, delete or insert a character, one random
  position each; no stopwords, Levenshtein distance <= 30; greedy, words ranked by deletion.
- `pruthi` (Pruthi et al. 2019): every swap, deletion, insertion and QWERTY typo keeping the
  first and last character; words of >= 4 characters, no stopwords, <= 1 perturbed word;
  greedy (beam width 1).
- `pwws` (Ren et al. 2019): WordNet synonyms; no stopwords; greedy, words ranked by weighted
  saliency.

Every recipe also never modifies a word twice. TextAttack's definitions are in
textattack/attack_recipes/ (read at commit f800c2c0); docs/text-classification.md gives the details.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass

from robench.perturbations.text.attack_constraints import AttackConstraints
from robench.perturbations.text.greedy_search import Search, greedy_beam, greedy_wir
from robench.perturbations.text.word_transformations import TRANSFORMATIONS, Transformation

# (text, label, transformation, constraints, rng, query budget) -> a search
SearchFn = Callable[
    [str, int, Transformation, AttackConstraints, random.Random, "int | None"], Search
]


def _wordnet_synonyms(word: str, rng: random.Random) -> list[str]:
    from robench.perturbations.text.wordnet import synonyms

    return synonyms(word)


@dataclass(frozen=True)
class Recipe:
    name: str
    transformation: Transformation
    search: SearchFn
    uses_wordnet: bool = False

    def start(
        self,
        text: str,
        label: int,
        constraints: AttackConstraints,
        seed: int,
        query_budget: int | None,
    ) -> Search:
        """One sample's search; its random choices come from `seed` only."""
        rng = random.Random(seed)
        return self.search(text, label, self.transformation, constraints, rng, query_budget)


RECIPES = {
    "deepwordbug": Recipe("deepwordbug", TRANSFORMATIONS["deepwordbug"], greedy_wir),
    "pruthi": Recipe("pruthi", TRANSFORMATIONS["pruthi"], greedy_beam),
    "pwws": Recipe(
        "pwws",
        _wordnet_synonyms,
        functools.partial(greedy_wir, ranking="weighted-saliency"),
        uses_wordnet=True,
    ),
}
