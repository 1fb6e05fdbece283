"""TextAttack's attack recipes (textattack/attack_recipes/, commit f800c2c0) as robench builds
them: a transformation (word_transformations.py, or WordNet synonyms for `pwws`), constraints
(attack_params.py) and a search (greedy_search.py); docs/text-classification.md gives details.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

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
    transformation: Transformation
    search: SearchFn
    uses_wordnet: bool = False  # its transformation reads WordNet (checked before a run)

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
    "deepwordbug": Recipe(TRANSFORMATIONS["deepwordbug"], greedy_wir),
    "pruthi": Recipe(TRANSFORMATIONS["pruthi"], greedy_beam),
    "pwws": Recipe(_wordnet_synonyms, partial(greedy_wir, ranking="weighted-saliency"), True),
}
