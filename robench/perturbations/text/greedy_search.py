"""TextAttack's untargeted searches over word swaps, written as generators of model queries.

A search yields the texts it wants scored, is sent back their class probabilities (n, K) and
returns an `AttackOutcome`, so one driver (`run_searches`) can score many samples' pending
texts in one model call. `greedy_wir` is `GreedyWordSwapWIR`, `greedy_beam` `GreedySearch`
(beam width 1), from textattack/search_methods/ at commit f800c2c0; each step, the goal score
and the query budget: docs/text-classification.md ("Search: ...").
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

import numpy as np

from robench.perturbations.text.attack_constraints import AttackConstraints
from robench.perturbations.text.word_spans import WordSpans
from robench.perturbations.text.word_transformations import Transformation

ScoreTexts = Callable[[Sequence[str]], np.ndarray]  # texts -> (n, K) class probabilities
UNK_TOKEN = "[UNK]"  # what weighted saliency puts in a word's place (TextAttack's default)


@dataclass(frozen=True)
class AttackOutcome:
    outcome: str  # "skipped" (already misclassified), "succeeded" or "failed"
    text: str  # the perturbed text (the original when skipped or nothing improved)
    queries: int  # model queries spent, the first (clean) one included
    changed_words: int
    words: int  # words of the original text


# A search: yields texts to score, is sent their probabilities, returns the outcome.
Search = Generator[list[str], np.ndarray, AttackOutcome]
# What a search's step yields from: (goal scores, predicted classes, budget spent).
Scored = Generator[list[str], np.ndarray, tuple[np.ndarray, np.ndarray, bool]]


class _Budget:
    """Counts queries and cuts a batch to what the budget has left (TextAttack stops there)."""

    def __init__(self, label: int, limit: int | None) -> None:
        self.label, self.limit, self.used = label, limit, 0

    def scores(self, texts: Sequence[str]) -> Scored:
        """(goal scores, predicted classes, budget spent) of as many texts as it allows."""
        room = len(texts) if self.limit is None else max(0, self.limit - self.used)
        texts = list(texts[:room])
        if not texts:
            return np.empty(0), np.empty(0, dtype=int), True
        probabilities = np.asarray((yield texts), dtype=np.float64)
        self.used += len(texts)
        spent = self.limit is not None and self.used >= self.limit
        return 1.0 - probabilities[:, self.label], probabilities.argmax(axis=1), spent


@dataclass
class _Attack:
    """What every search shares: the original, the model's budget, the recipe's parts."""

    original: WordSpans
    label: int
    transformation: Transformation
    constraints: AttackConstraints
    rng: random.Random
    budget: _Budget

    def candidates(self, current: WordSpans, index: int) -> list[WordSpans]:
        """The transformation's candidates for word `index` that the constraints allow."""
        words = self.transformation(current.words[index], self.rng)
        candidates = [current.replace(index, word) for word in words]
        return [c for c in candidates if self.constraints.allows(c, self.original)]

    def outcome(self, kind: str, text: WordSpans) -> AttackOutcome:
        changed = len(text.changed_words(self.original))
        return AttackOutcome(kind, text.text, self.budget.used, changed, len(self.original.words))


def _deleted(text: WordSpans, index: int) -> str:
    start, end = text.spans[index]
    return text.text[:start] + text.text[end:]


def _ranking(attack: _Attack, indices: list[int], how: str) -> Scored:
    """Word importance scores of `indices` (TextAttack's `_get_index_order`)."""
    original = attack.original
    if how == "delete":
        return (yield from attack.budget.scores([_deleted(original, i) for i in indices]))
    saliency, _, spent = yield from attack.budget.scores(
        [original.replace(i, UNK_TOKEN).text for i in indices]
    )
    if len(saliency) < len(indices):  # the budget ran out while ranking
        return np.zeros(len(indices)), np.empty(0, dtype=int), True
    weights = np.exp(saliency - saliency.max())
    weights /= weights.sum()
    best = np.zeros(len(indices))
    for position, index in enumerate(indices):
        if spent:
            break
        candidates = attack.candidates(original, index)
        if candidates:
            scores, _, spent = yield from attack.budget.scores([c.text for c in candidates])
            best[position] = scores.max() if len(scores) else 0.0
    return weights * best, np.empty(0, dtype=int), spent


def greedy_wir(
    text: str,
    label: int,
    transformation: Transformation,
    constraints: AttackConstraints,
    rng: random.Random,
    query_budget: int | None = None,
    ranking: str = "delete",
) -> Search:
    """`GreedyWordSwapWIR(ranking)`, untargeted (see the module docstring)."""
    original, budget = WordSpans.of(text), _Budget(label, query_budget)
    attack = _Attack(original, label, transformation, constraints, rng, budget)
    score, predicted, _ = yield from budget.scores([text])
    if predicted[0] != label:
        return attack.outcome("skipped", original)
    indices = constraints.modifiable(original, ())
    importance, _, spent = yield from _ranking(attack, indices, ranking)
    order = [indices[i] for i in np.argsort(-importance, kind="stable")] if not spent else []
    current, current_score = original, float(score[0])
    for index in order:
        candidates = attack.candidates(current, index)
        if not candidates:
            continue
        scores, predicted, spent = yield from budget.scores([c.text for c in candidates])
        if len(scores) and scores.max() > current_score:
            best = int(np.argmax(scores))  # the first of equal scores
            current, current_score = candidates[best], float(scores[best])
            if predicted[best] != label:
                return attack.outcome("succeeded", current)
        if spent:
            break
    return attack.outcome("failed", current)


def greedy_beam(
    text: str,
    label: int,
    transformation: Transformation,
    constraints: AttackConstraints,
    rng: random.Random,
    query_budget: int | None = None,
) -> Search:
    """`GreedySearch` (beam width 1), untargeted (see the module docstring)."""
    original, budget = WordSpans.of(text), _Budget(label, query_budget)
    attack = _Attack(original, label, transformation, constraints, rng, budget)
    _, predicted, _ = yield from budget.scores([text])
    if predicted[0] != label:
        return attack.outcome("skipped", original)
    current: WordSpans = original
    modified: tuple[int, ...] = ()
    while True:
        candidates = [
            candidate
            for index in constraints.modifiable(current, modified)
            for candidate in attack.candidates(current, index)
        ]
        if not candidates:
            return attack.outcome("failed", current)
        scores, predicted, spent = yield from budget.scores([c.text for c in candidates])
        if len(scores) == 0:
            return attack.outcome("failed", current)
        best = int(np.argmax(scores))
        current = candidates[best]
        modified = current.changed_words(original)
        if predicted[best] != label:
            return attack.outcome("succeeded", current)
        if spent:
            return attack.outcome("failed", current)


def run_searches(searches: Sequence[Search], score_texts: ScoreTexts) -> list[AttackOutcome]:
    """Advance every search until it returns, scoring all their pending texts in one
    `score_texts` call per round."""
    outcomes: list[AttackOutcome | None] = [None] * len(searches)
    pending: dict[int, list[str]] = {}
    for i, search in enumerate(searches):
        _advance(i, search, None, pending, outcomes)
    while pending:
        order = list(pending)
        texts = [text for i in order for text in pending[i]]
        probabilities = np.asarray(score_texts(texts))
        start, asked = 0, dict(pending)
        pending.clear()
        for i in order:
            stop = start + len(asked[i])
            _advance(i, searches[i], probabilities[start:stop], pending, outcomes)
            start = stop
    return [outcome for outcome in outcomes if outcome is not None]


def _advance(
    i: int,
    search: Search,
    answer: np.ndarray | None,
    pending: dict[int, list[str]],
    outcomes: list[AttackOutcome | None],
) -> None:
    try:
        pending[i] = search.send(answer) if answer is not None else next(search)
    except StopIteration as stop:
        outcomes[i] = stop.value
