"""The word transformations of TextAttack's character-level recipes, as pure functions:
`edit_candidates(word, edit, rng)` is one edit's candidates for one word
(textattack/transformations/word_swaps/, commit f800c2c0), `TRANSFORMATIONS` composes them as
the `deepwordbug` and `pruthi` recipes do; the rules: docs/text-classification.md, "Character
edits of one word".
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable

LETTERS = string.ascii_letters  # TextAttack's default `letters_to_insert`

# TextAttack's `WordSwapQWERTY._keyboard_adjacency`: lower-case keys and their neighbours. It
# is not the geometric table of swaps.py (Word Swap's typos): TextAttack's is hand-written and
# not symmetric ('a' -> x, 'x' -/> a), and the recipes' candidates must equal its.
_ROWS = {  # each keyboard row's keys -> their neighbours, key by key
    "qwertyuiop": "was qeasd wsdfr edfgt rfghy tghju yhjki ujklo iklp ol",
    "asdfghjkl": "qwszx qweadzx werfcxs ertgvcd rtyhbvd tyugjbn yuikmnh uiolmj iopk",
    "zxcvbnm": "asx sdzc xdfv cfgb vghn bhjm njk",
}
QWERTY_NEIGHBOURS: dict[str, str] = {
    key: near
    for keys, nears in _ROWS.items()
    for key, near in zip(keys, nears.split(), strict=True)
}


def _positions(word: str, skip_first: bool, skip_last: bool, pairs: bool = False) -> range:
    """The positions an edit may start at; for a swap (`pairs`) the pair (i, i+1) must avoid
    the skipped characters."""
    start = 1 if skip_first else 0
    end = len(word) - (1 if pairs else 0) - (1 if skip_last else 0)
    return range(start, end) if start < end else range(0)


def _kept(word: str, candidates: list[str]) -> list[str]:
    return [c for c in candidates if c != word]


def _neighbours(char: str) -> str:
    keys = QWERTY_NEIGHBOURS.get(char.lower(), "")
    return keys.upper() if char.isupper() else keys  # TextAttack: only upper keeps its case


EditAt = Callable[[str, int, random.Random], list[str]]
# edit -> (candidates at position i, edits a pair (i, i+1), takes TextAttack's skip options);
# an insertion goes before character i, so it never appends.
_EDITS: dict[str, tuple[EditAt, bool, bool]] = {
    "swap": (lambda w, i, rng: [w[:i] + w[i + 1] + w[i] + w[i + 2 :]], True, True),
    "delete": (lambda w, i, rng: [w[:i] + w[i + 1 :]], False, True),
    "insert": (lambda w, i, rng: [w[:i] + rng.choice(LETTERS) + w[i:]], False, True),
    "substitute": (lambda w, i, rng: [w[:i] + rng.choice(LETTERS) + w[i + 1 :]], False, False),
    "qwerty": (lambda w, i, rng: [w[:i] + k + w[i + 1 :] for k in _neighbours(w[i])], False, True),
}


def edit_candidates(
    word: str,
    edit: str,
    rng: random.Random,
    *,
    random_one: bool = False,
    skip_first: bool = False,
    skip_last: bool = False,
) -> list[str]:
    """The candidates one edit offers for `word`: at every allowed position, or (TextAttack's
    default `random_one`) at one position drawn uniformly by `rng` (then one random QWERTY
    neighbour). Letters to insert or substitute are drawn from `rng` in either mode."""
    at, pairs, skips = _EDITS[edit]
    if len(word) <= 1:
        return []
    if not skips:
        skip_first = skip_last = False
    positions = _positions(word, skip_first, skip_last, pairs)
    if not random_one:
        return _kept(word, [c for i in positions for c in at(word, i, rng)])
    if not positions:
        return []
    found = at(word, rng.choice(positions), rng)
    return _kept(word, [rng.choice(found)] if found else [])


Transformation = Callable[[str, random.Random], list[str]]


def _deepwordbug(word: str, rng: random.Random) -> list[str]:
    """DeepWordBug (Gao et al. 2018) as TextAttack's recipe builds it."""
    edits = ("swap", "substitute", "delete", "insert")
    return _unique([edit_candidates(word, e, rng, random_one=True) for e in edits])


def _pruthi(word: str, rng: random.Random) -> list[str]:
    """Pruthi et al. 2019's typos as TextAttack's recipe builds them."""
    edits = ("swap", "delete", "insert", "qwerty")
    return _unique([edit_candidates(word, e, rng, skip_first=True, skip_last=True) for e in edits])


def _unique(groups: list[list[str]]) -> list[str]:
    """The candidates of every group, first occurrence first (TextAttack's composite keeps a
    set; the order is only for reproducibility)."""
    return list(dict.fromkeys(candidate for group in groups for candidate in group))


TRANSFORMATIONS: dict[str, Transformation] = {
    "deepwordbug": _deepwordbug,
    "pruthi": _pruthi,
}
