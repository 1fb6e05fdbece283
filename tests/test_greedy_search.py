"""The greedy word-swap search with deletion-ranked words (TextAttack's GreedyWordSwapWIR
"delete", untargeted) against a transparent bag-of-words classifier."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest

from robench.perturbations.text.attack_constraints import AttackConstraints
from robench.perturbations.text.greedy_search import greedy_wir, run_searches
from robench.perturbations.text.word_spans import WordSpans

WEIGHTS = {"good": 3.0, "great": 2.0, "film": 0.5}  # evidence for class 1; other words 0
BIAS = -1.0
SWAPS = {"good": ["god", "goo"], "great": ["grate"], "film": ["flim"]}


class Counting:
    """p(class 1) = sigmoid(bias + sum of word weights); counts the texts it scores."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        logits = [BIAS + sum(WEIGHTS.get(w, 0.0) for w in WordSpans.of(t).words) for t in texts]
        p1 = 1 / (1 + np.exp(-np.array(logits)))
        return np.stack([1 - p1, p1], axis=1)


def _swaps(word: str, rng: random.Random) -> list[str]:
    return SWAPS.get(word, [])


def _attack(text: str, label: int = 1, budget: int | None = None, **limits: int):
    model = Counting()
    search = greedy_wir(text, label, _swaps, AttackConstraints(**limits), random.Random(0), budget)
    (found,) = run_searches([search], model)
    return found, model


def test_words_are_tried_by_deletion_importance_until_the_label_flips() -> None:
    found, model = _attack("a good and great film")
    assert found.outcome == "succeeded"
    assert found.text == "a god and grate film"  # good first (largest drop), then great
    assert found.changed_words == 2 and found.words == 5
    # 1 clean query, 3 deletions (a and "and" are stopwords), good's 2 candidates, great's 1
    assert found.queries == len(model.texts) == 1 + 3 + 2 + 1
    assert model.texts[1:4] == ["a  and great film", "a good and  film", "a good and great "]
    assert model(["a god and grate film"])[0].argmax() == 0  # the model is now wrong


def test_a_sample_already_wrong_is_skipped_with_one_query() -> None:
    found, _ = _attack("a good and great film", label=0)
    assert (found.outcome, found.queries, found.text) == ("skipped", 1, "a good and great film")


def test_constraints_and_the_budget_end_a_search_as_failed() -> None:
    found, _ = _attack("a good and great film", max_words_perturbed=1)
    assert found.outcome == "failed" and found.changed_words == 1
    assert found.text == "a god and great film"  # the best single swap, still class 1
    spent, model = _attack("a good and great film", budget=5)
    assert spent.outcome == "failed" and spent.queries == len(model.texts) == 5


@pytest.mark.parametrize("seed", range(20))
def test_a_success_is_misclassified_and_within_the_constraints(seed: int) -> None:
    rng = random.Random(seed)
    words = [rng.choice(["good", "great", "film", "plot", "the"]) for _ in range(6)]
    text = " ".join(words)
    found, model = _attack(text, max_words_perturbed=3)
    original, perturbed = WordSpans.of(text), WordSpans.of(found.text)
    assert len(perturbed.changed_words(original)) == found.changed_words <= 3
    label_now = model([found.text])[0].argmax()
    assert (found.outcome == "succeeded") == (label_now == 0 and found.outcome != "skipped")
