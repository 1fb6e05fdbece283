"""TextAttack's greedy word-swap search with word importance ranking by deletion, untargeted.

`attack_one` follows `GreedyWordSwapWIR("delete")` with `UntargetedClassification`
(textattack/search_methods/greedy_word_swap_wir.py and goal_functions/classification/, read
at commit f800c2c0):
1. The model scores the text; a sample it already gets wrong is `skipped`.
2. Each modifiable word is ranked by how much deleting it lowers the probability of the true
   class (one query per word; ties keep word order, where numpy's argsort does not promise it).
3. In that order, each word's candidate replacements (the recipe's transformation, kept only
   if the recipe's constraints allow the whole text) are scored in one batch; the best one is
   kept when it lowers the true class's probability more than the current text does.
4. The search ends `succeeded` at the first text the model misclassifies, `failed` when the
   words run out or the query budget is spent.
The goal score is 1 - p(true class), p the softmax of the model's logits. `score_texts` is the
only access to the model: it takes a list of texts and returns their class probabilities.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from robench.perturbations.text.attack_constraints import AttackConstraints
from robench.perturbations.text.word_spans import WordSpans
from robench.perturbations.text.word_transformations import Transformation

ScoreTexts = Callable[[Sequence[str]], np.ndarray]  # texts -> (n, K) class probabilities
OUTCOMES = ("skipped", "succeeded", "failed")


@dataclass(frozen=True)
class AttackOutcome:
    outcome: str  # one of OUTCOMES
    text: str  # the perturbed text (the original when skipped or nothing improved)
    queries: int  # model queries spent, the first (clean) one included
    changed_words: int
    words: int  # words of the original text


class _Budget:
    """Counts queries and cuts a batch to what the budget has left (TextAttack stops there)."""

    def __init__(self, score_texts: ScoreTexts, label: int, limit: int | None) -> None:
        self.score_texts, self.label, self.limit, self.used = score_texts, label, limit, 0

    def scores(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, bool]:
        """(goal scores, predicted classes, budget spent) of as many texts as the budget allows."""
        room = len(texts) if self.limit is None else max(0, self.limit - self.used)
        texts = texts[:room]
        if not texts:
            return np.empty(0), np.empty(0, dtype=int), True
        probabilities = np.asarray(self.score_texts(texts), dtype=np.float64)
        self.used += len(texts)
        spent = self.limit is not None and self.used >= self.limit
        return 1.0 - probabilities[:, self.label], probabilities.argmax(axis=1), spent


def _deleted(text: WordSpans, index: int) -> str:
    """The text without word `index`'s characters; the spaces around it stay, as TextAttack's
    `delete_word_at_index` leaves them."""
    start, end = text.spans[index]
    return text.text[:start] + text.text[end:]


def attack_one(
    text: str,
    label: int,
    score_texts: ScoreTexts,
    transformation: Transformation,
    constraints: AttackConstraints,
    rng: random.Random,
    query_budget: int | None = None,
) -> AttackOutcome:
    """One sample's attack; `rng` draws the transformation's random letters."""
    original = WordSpans.of(text)
    budget = _Budget(score_texts, label, query_budget)
    score, predicted, _ = budget.scores([text])
    if predicted[0] != label:
        return AttackOutcome("skipped", text, budget.used, 0, len(original.words))
    indices = constraints.modifiable(original, ())
    ranking, _, spent = budget.scores([_deleted(original, i) for i in indices])
    order = [indices[i] for i in np.argsort(-ranking, kind="stable")]
    current, current_score = original, float(score[0])
    for index in order:
        if spent:
            break
        candidates = []
        for word in transformation(current.words[index], rng):
            candidate = current.replace(index, word)
            if constraints.allows(candidate, original):
                candidates.append(candidate)
        if not candidates:
            continue
        scores, predicted, spent = budget.scores([c.text for c in candidates])
        if len(scores) == 0 or scores.max() <= current_score:
            continue
        best = int(np.argmax(scores))  # the first of equal scores, as a stable sort keeps it
        current, current_score = candidates[best], float(scores[best])
        if predicted[best] != label:
            changed = len(current.changed_words(original))
            return AttackOutcome(
                "succeeded", current.text, budget.used, changed, len(original.words)
            )
    changed = len(current.changed_words(original))
    return AttackOutcome("failed", current.text, budget.used, changed, len(original.words))
