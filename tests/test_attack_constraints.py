"""Words as TextAttack's attacks split them, one replaced in place, and its recipes'
constraints (docs/text-classification.md)."""

from __future__ import annotations

import random

import pytest

from robench.perturbations.text.attack_constraints import AttackConstraints, levenshtein
from robench.perturbations.text.word_spans import WordSpans


def test_words_follow_textattacks_splitting_and_keep_their_spans() -> None:
    text = WordSpans.of("It's a well-known (film), 'quoted' -- e.g. x@y.com!")
    assert text.words == ("It's", "a", "well-known", "film", "quoted", "e", "g", "x@y", "com")
    assert all(text.text[s:e] == w for (s, e), w in zip(text.spans, text.words, strict=True))
    assert WordSpans.of("  \n").words == ()


def test_replacing_a_word_keeps_the_rest_of_the_text() -> None:
    text = WordSpans.of("A  gripping, funny film.")
    edited = text.replace(1, "griping").replace(3, "movie")
    assert edited.text == "A  griping, funny movie."
    assert edited.words == ("A", "griping", "funny", "movie")
    assert edited == WordSpans.of(edited.text)  # spans shifted as a fresh split finds them
    assert edited.changed_words(text) == (1, 3)


def test_levenshtein_distance_and_its_early_exit() -> None:
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("", "abc") == 3 and levenshtein("same", "same") == 0
    rng = random.Random(0)
    for _ in range(50):  # the early exit never changes whether a limit holds
        a = "".join(rng.choice("ab") for _ in range(rng.randrange(12)))
        b = "".join(rng.choice("ab") for _ in range(rng.randrange(12)))
        full = levenshtein(a, b)
        assert levenshtein(b, a) == full
        for limit in range(6):
            assert (levenshtein(a, b, limit) <= limit) == (full <= limit)


def test_pre_transformation_constraints_pick_the_modifiable_words() -> None:
    text = WordSpans.of("The film is not a triumph of the art")
    pruthi = AttackConstraints(min_word_length=4, max_words_perturbed=1)
    # stopwords (as written: "The" is not one, "the" is) and words under 4 letters are kept
    assert [text.words[i] for i in pruthi.modifiable(text, ())] == ["film", "triumph"]
    assert pruthi.modifiable(text, {1}) == [5]  # no word is modified twice
    everything = AttackConstraints(skip_stopwords=False)
    assert everything.modifiable(text, ()) == list(range(9))
    assert AttackConstraints().modifiable(text, ())[:2] == [0, 1]


@pytest.mark.parametrize(
    ("edits", "allowed"),
    [({1: "flim"}, True), ({1: "flim", 5: "triumhp"}, False)],  # 2 words > max 1
)
def test_candidate_constraints_compare_with_the_original(
    edits: dict[int, str], allowed: bool
) -> None:
    original = WordSpans.of("The film is not a triumph")
    candidate = original
    for index, word in edits.items():
        candidate = candidate.replace(index, word)
    assert AttackConstraints(max_words_perturbed=1).allows(candidate, original) is allowed
    assert AttackConstraints(max_edit_distance=2).allows(candidate, original) is allowed
