"""The character edits of TextAttack's DeepWordBug and Pruthi recipes: candidate sets as
TextAttack's word-swap classes define them (docs/text-classification.md), written out by hand."""

from __future__ import annotations

import random

import pytest

from robench.perturbations.text.word_transformations import (
    LETTERS,
    TRANSFORMATIONS,
    edit_candidates,
)

EDGES = {"skip_first": True, "skip_last": True}


def _all(word: str, edit: str, **options: bool) -> list[str]:
    return edit_candidates(word, edit, random.Random(0), **options)


def test_swaps_deletions_and_qwerty_typos_at_every_allowed_position() -> None:
    assert _all("word", "swap") == ["owrd", "wrod", "wodr"]
    assert _all("word", "swap", **EDGES) == ["wrod"]  # no pair may touch w or d
    assert _all("word", "delete") == ["ord", "wrd", "wod", "wor"]
    assert _all("word", "delete", **EDGES) == ["wrd", "wod"]
    assert _all("word", "qwerty", **EDGES) == [
        "wird", "wkrd", "wlrd", "wprd",  # o -> i k l p
        "woed", "wodd", "wofd", "wogd", "wotd",  # r -> e d f g t
    ]  # fmt: skip
    assert _all("WORD", "qwerty", **EDGES)[:4] == ["WIRD", "WKRD", "WLRD", "WPRD"]
    assert _all("wo2d", "qwerty", **EDGES) == ["wi2d", "wk2d", "wl2d", "wp2d"]  # 2: no keys


def test_random_letters_and_the_words_edits_leave_alone() -> None:
    inserted = _all("word", "insert", **EDGES)
    assert [(c[: 1 + i], c[2 + i :]) for i, c in enumerate(inserted)] == [
        ("w", "ord"),
        ("wo", "rd"),
    ]
    assert all(len(c) == 5 and c[1 + i] in LETTERS for i, c in enumerate(inserted))  # before o, r
    substituted = _all("word", "substitute", **EDGES)  # TextAttack's has no skip options
    assert len(substituted) <= 4 and all(len(c) == 4 for c in substituted)
    assert _all("a", "swap") == [] and _all("a", "delete") == []  # one-letter words
    assert _all("aa", "swap") == []  # a swap that gives the word back is no candidate
    assert _all("abc", "swap", **EDGES) == []  # no pair inside the edges


def test_one_random_edit_per_kind_is_seeded() -> None:
    draws = [
        edit_candidates("fabulous", "delete", random.Random(s), random_one=True) for s in range(40)
    ]
    assert all(len(d) == 1 and d[0] in _all("fabulous", "delete") for d in draws)
    assert len({d[0] for d in draws}) > 3  # positions vary with the seed
    again = [
        edit_candidates("fabulous", "delete", random.Random(s), random_one=True) for s in range(40)
    ]
    assert draws == again


def test_recipes_compose_the_edits() -> None:
    pruthi = TRANSFORMATIONS["pruthi"]("word", random.Random(1))
    assert set(_all("word", "swap", **EDGES)) <= set(pruthi)
    assert set(_all("word", "qwerty", **EDGES)) <= set(pruthi)
    assert all(c[0] == "w" and c[-1] == "d" for c in pruthi)  # first and last kept
    assert len(pruthi) == len(set(pruthi))
    bug = TRANSFORMATIONS["deepwordbug"]("fabulous", random.Random(1))
    assert 1 <= len(bug) <= 4 and "fabulous" not in bug
    assert TRANSFORMATIONS["deepwordbug"]("fabulous", random.Random(1)) == bug


@pytest.mark.parametrize("edit", ["swap", "delete", "insert", "substitute", "qwerty"])
def test_no_edit_returns_the_word_itself(edit: str) -> None:
    for word in ("ab", "aaa", "Mississippi", "x1y"):
        assert word not in _all(word, edit)
