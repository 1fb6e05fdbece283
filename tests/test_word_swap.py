"""The `word-swap` kind: rates, seeding, eligibility, the character-level methods, the
parameters and the dataset summary (robench/perturbations/text)."""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from pydoc_data.topics import topics
from typing import Any

import pytest
from pydantic import ValidationError

from robench.perturbations import PERTURBATIONS, build_perturbation
from robench.perturbations.text.params import WordSwapParams
from robench.perturbations.text.perturbation import WordSwap
from robench.perturbations.text.swaps import (
    QWERTY_NEIGHBOURS,
    is_stopword,
    is_word,
    stopwords,
    swap_lines,
)

Lines = list[tuple[str, ...]]
CHAR_METHODS = ["char-delete", "char-insert", "char-substitute", "char-swap", "qwerty"]
ALL_METHODS = ["replace", *CHAR_METHODS]
PAPER_CODE = {"rate": 0.015, "skip_stopwords": True, "min_per_line": 1}


def _corpus(min_words: int) -> Lines:
    """Real English text (Python's pydoc topics, in name order), one tuple of words per
    non-empty line, tokenised by `str.split()`; at least `min_words` words."""
    lines: Lines = []
    words = 0
    for name in sorted(topics):
        for line in topics[name].splitlines():
            if line.split():
                lines.append(tuple(line.split()))
                words += len(lines[-1])
        if words >= min_words:
            return lines
    raise AssertionError("pydoc topics has fewer words than asked for")


CORPUS = _corpus(8000)  # about 1200 lines, 9500 words (Python 3.11.7)


def _swap(lines: Sequence[Sequence[str]], seed: int = 0, **params: Any) -> Any:
    return swap_lines(lines, WordSwapParams(**params), seed)


def _changed(before: Sequence[tuple[str, ...]], after: Sequence[tuple[str, ...]]) -> list[Any]:
    return [
        (a, b)
        for la, lb in zip(before, after, strict=True)
        for a, b in zip(la, lb, strict=True)
        if a != b
    ]


# --- rates -----------------------------------------------------------------------------------


def test_corpus_is_a_few_thousand_words() -> None:
    assert 8000 <= sum(map(len, CORPUS)) <= 12000


@pytest.mark.parametrize("rate", [0.025, 0.015])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_realised_rate_is_close_to_the_requested_rate(rate: float, seed: int) -> None:
    lines, stats = _swap(CORPUS, seed, rate=rate)
    assert stats.tokens == sum(map(len, CORPUS))
    assert stats.words == sum(is_word(w) for line in CORPUS for w in line) < stats.tokens
    assert stats.swapped == len(_changed(CORPUS, lines))
    assert abs(stats.realised_rate - rate) <= 0.005  # swapped / words
    assert abs(stats.swapped_per_eligible - rate) <= 0.005  # swapped / eligible words
    assert stats.realised_rate == pytest.approx(stats.swapped / stats.words)
    assert stats.swapped_per_eligible == pytest.approx(stats.swapped / stats.eligible)


def test_stochastic_rounding_is_unbiased() -> None:
    """Averaged over seeds, swapped / eligible is the rate itself (a biased rounding, such as
    round() or floor() of rate * n on short lines, would give 0 or a multiple of it)."""
    rates = [_swap(CORPUS, seed, rate=0.025)[1].swapped_per_eligible for seed in range(40)]
    assert sum(rates) / len(rates) == pytest.approx(0.025, abs=0.001)
    short = [("one", "two", "three", "four")] * 2000  # rate * n = 0.1 per line
    _, stats = _swap(short, 0, rate=0.025)
    assert stats.swapped / stats.eligible == pytest.approx(0.025, abs=0.006)


def test_paper_code_protocol_swaps_every_line_and_never_a_stopword() -> None:
    lines, stats = _swap(CORPUS, 0, **PAPER_CODE)
    with_eligible = [
        i for i, line in enumerate(CORPUS) if any(is_word(w) and not is_stopword(w) for w in line)
    ]
    assert stats.lines_with_swap == len(with_eligible)
    for i in with_eligible:
        assert lines[i] != CORPUS[i], CORPUS[i]
    assert all(not is_stopword(a) for a, _ in _changed(CORPUS, lines))
    assert stats.realised_rate > 0.1  # one swap per short line is far more than 1.5%


# --- seeding and independence of lines ------------------------------------------------------


def test_same_seed_same_text_other_seed_other_text() -> None:
    first, stats = _swap(CORPUS, 7)
    again, stats_again = _swap(CORPUS, 7)
    other, _ = _swap(CORPUS, 8)
    assert first == again and stats == stats_again
    assert first != other
    # both swap about the same number of words, at different places
    assert {i for i, (a, b) in enumerate(zip(first, CORPUS, strict=True)) if a != b} != {
        i for i, (a, b) in enumerate(zip(other, CORPUS, strict=True)) if a != b
    }


def test_a_line_depends_only_on_its_line_number() -> None:
    params = WordSwapParams(**PAPER_CODE)
    whole, _ = swap_lines(CORPUS, params, 3)
    one_by_one = [
        swap_lines([line], params, 3, line_numbers=[i])[0][0] for i, line in enumerate(CORPUS)
    ]
    assert one_by_one == whole
    order = list(reversed(range(len(CORPUS))))
    reordered, _ = swap_lines([CORPUS[i] for i in order], params, 3, line_numbers=order)
    assert reordered == [whole[i] for i in order]
    half = len(CORPUS) // 2
    head, _ = swap_lines(CORPUS[:half], params, 3)
    tail, _ = swap_lines(CORPUS[half:], params, 3, line_numbers=range(half, len(CORPUS)))
    assert head + tail == whole
    # ...and the line number does matter: the same line elsewhere is swapped elsewhere
    shifted, _ = swap_lines(CORPUS, params, 3, line_numbers=range(1, len(CORPUS) + 1))
    assert shifted != whole


def test_line_numbers_must_match_the_lines() -> None:
    with pytest.raises(ValueError, match="2 line numbers for 1 lines"):
        swap_lines([("a", "b")], WordSwapParams(), 0, line_numbers=[0, 1])


@pytest.mark.parametrize("method", ALL_METHODS)
def test_every_line_keeps_its_number_of_words(method: str) -> None:
    lines, stats = _swap(CORPUS, 0, rate=0.5, method=method)
    assert [len(line) for line in lines] == [len(line) for line in CORPUS]
    assert all(w and not any(c.isspace() for c in w) for line in lines for w in line)
    assert stats.swapped > 1000


# --- eligibility -----------------------------------------------------------------------------

SPECIALS = [
    ("<unk>", "is", "a", "word", ",", "the", "<unk>", "too", ".", "<eos>"),
    ("@-@", "--", "(", ")", ";", "...", "'", "<pad>", "<eos>"),
    ("The", "year", "1999", "@,@", "and", "don't", "X", "!", "<eos>"),
]


@pytest.mark.parametrize("method", ALL_METHODS)
def test_specials_and_punctuation_are_never_swapped(method: str) -> None:
    lines, stats = _swap(SPECIALS * 50, 0, rate=1.0, method=method)
    for before, after in zip(SPECIALS * 50, lines, strict=True):
        for a, b in zip(before, after, strict=True):
            if a.startswith("<") or not any(c.isalnum() for c in a):
                assert a == b
    assert stats.tokens == sum(len(line) - 1 for line in SPECIALS) * 50  # <eos> not counted
    assert stats.lines_with_swap == 100  # the second line has no word to swap


def test_rate_one_replaces_every_eligible_word() -> None:
    (a, b, c), stats = _swap(SPECIALS, 0, rate=1.0)
    assert a == ("<unk>", "AAA", "AAA", "AAA", ",", "AAA", "<unk>", "AAA", ".", "<eos>")
    assert b == SPECIALS[1]
    assert c == ("AAA", "AAA", "AAA", "@,@", "AAA", "AAA", "AAA", "!", "<eos>")
    assert (stats.eligible, stats.swapped, stats.tokens, stats.words) == (11, 11, 25, 11)


def test_skip_stopwords_never_touches_a_stopword() -> None:
    lines, stats = _swap(CORPUS, 0, rate=1.0, skip_stopwords=True)
    kept = [
        a
        for la, lb in zip(CORPUS, lines, strict=True)
        for a, b in zip(la, lb, strict=True)
        if a == b
    ]
    swapped = [a for a, _ in _changed(CORPUS, lines)]
    assert not any(is_stopword(w) for w in swapped)
    assert {"The", "the", "is", "a", "it", "of"} <= set(kept)  # case-insensitive
    assert all(is_stopword(w) or not is_word(w) for w in kept)
    assert stats.swapped == stats.eligible > 3000


def test_stopword_list() -> None:
    assert len(stopwords()) == 179  # NLTK's English list
    assert {"the", "and", "don't", "wouldn't", "s", "ll"} <= stopwords()
    assert is_stopword("The") and is_stopword("'s") and is_stopword("'ll")
    assert not is_stopword("model") and not is_stopword("AAA")


def test_min_per_line_gives_every_line_with_a_word_a_swap() -> None:
    lines, stats = _swap(CORPUS, 5, rate=0.001, min_per_line=1)
    has_word = [any(map(is_word, line)) for line in CORPUS]
    assert [a != b for a, b in zip(CORPUS, lines, strict=True)] == has_word
    assert stats.lines_with_swap == sum(has_word)
    # capped at the eligible words of a line
    (line,), stats = _swap([("one", ",", "two")], 0, min_per_line=5)
    assert line == ("AAA", ",", "AAA") and stats.swapped == 2


def test_a_word_equal_to_the_token_is_not_eligible() -> None:
    (line,), stats = _swap([("AAA", "bbb")], 0, rate=1.0)
    assert line == ("AAA", "AAA") and (stats.eligible, stats.swapped) == (1, 1)


@pytest.mark.parametrize(
    ("method", "untouched"),
    [
        ("char-delete", ("a", "I", "7")),  # one character: deleting it would leave nothing
        ("char-swap", ("a", "oo", "111")),  # no two different adjacent characters
        ("qwerty", ("1999", "42", "ü")),  # no ASCII letter
    ],
)
def test_words_a_char_method_cannot_change_are_not_eligible(
    method: str, untouched: tuple[str, ...]
) -> None:
    line = (*untouched, "word")
    (out,), stats = _swap([line], 0, rate=1.0, method=method)
    assert out[:-1] == untouched and out[-1] != "word"
    assert (stats.eligible, stats.swapped) == (1, 1)


# --- the character-level methods -------------------------------------------------------------


def _one_deleted(long: str, short: str) -> str | None:
    """The character of `long` that `short` lacks, if `short` is `long` with one removed."""
    for i in range(len(long)):
        if long[:i] + long[i + 1 :] == short:
            return long[i]
    return None


def _check_delete(a: str, b: str) -> None:
    assert len(b) == len(a) - 1 and _one_deleted(a, b) is not None


def _check_insert(a: str, b: str) -> None:
    assert len(b) == len(a) + 1
    assert (_one_deleted(b, a) or "") in string.ascii_lowercase


def _diffs(a: str, b: str) -> list[int]:
    assert len(a) == len(b)
    return [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]


def _check_substitute(a: str, b: str) -> None:
    (i,) = _diffs(a, b)
    assert b[i] in string.ascii_lowercase and b[i] != a[i].lower()


def _check_swap(a: str, b: str) -> None:
    i, j = _diffs(a, b)
    assert j == i + 1 and (b[i], b[j]) == (a[j], a[i])


def _check_qwerty(a: str, b: str) -> None:
    (i,) = _diffs(a, b)
    assert b[i].lower() in QWERTY_NEIGHBOURS[a[i].lower()]
    assert b[i].isupper() == a[i].isupper()


CHECKS = {
    "char-delete": _check_delete,
    "char-insert": _check_insert,
    "char-substitute": _check_substitute,
    "char-swap": _check_swap,
    "qwerty": _check_qwerty,
}


@pytest.mark.parametrize("method", CHAR_METHODS)
def test_char_methods_edit_one_character(method: str) -> None:
    lines, stats = _swap(CORPUS, 0, rate=1.0, method=method)
    changed = _changed(CORPUS, lines)
    assert len(changed) == stats.swapped == stats.eligible > 8000
    for a, b in changed:
        assert a != b
        CHECKS[method](a, b)
    # the edits are spread over positions and letters, not always the same one
    assert len({b for _, b in changed}) > 0.5 * len({a for a, _ in changed})


def test_qwerty_keeps_upper_case() -> None:
    (line,), _ = _swap([("HELLO", "World")], 0, rate=1.0, method="qwerty")
    for a, b in zip(("HELLO", "World"), line, strict=True):
        _check_qwerty(a, b)


def test_qwerty_table_is_a_keyboard() -> None:
    assert set(QWERTY_NEIGHBOURS) == set(string.ascii_lowercase)
    assert set(QWERTY_NEIGHBOURS["s"]) == set("awedxz")
    assert set(QWERTY_NEIGHBOURS["q"]) == set("wa")
    assert set(QWERTY_NEIGHBOURS["m"]) == set("njk")
    assert set(QWERTY_NEIGHBOURS["g"]) == set("fhtyvb")
    for key, near in QWERTY_NEIGHBOURS.items():  # adjacency goes both ways
        assert all(key in QWERTY_NEIGHBOURS[n] for n in near), key


# --- parameters ------------------------------------------------------------------------------


def test_kind_is_registered_for_language_modelling() -> None:
    entry = PERTURBATIONS.get("word-swap")
    assert entry.Params is WordSwapParams
    assert WordSwapParams.task == "language-modeling" and WordSwapParams.unbounded
    assert entry.description.startswith("Word Swap")
    perturbation = build_perturbation("word-swap", PAPER_CODE)
    assert isinstance(perturbation, WordSwap) and perturbation.eps is None
    defaults = WordSwapParams()
    assert (defaults.rate, defaults.method, defaults.token) == (0.025, "replace", "AAA")
    assert (defaults.skip_stopwords, defaults.min_per_line) == (False, 0)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"rate": 0}, "greater than 0"),
        ({"rate": 1.5}, "less than or equal to 1"),
        ({"rate": -0.1}, "greater than 0"),
        ({"method": "qwery"}, "Did you mean 'qwerty'"),
        ({"method": "char-delet"}, "Did you mean 'char-delete'"),
        ({"method": "char-swap", "token": "UNK"}, "only used by method 'replace'"),
        ({"token": "A B"}, "one word"),
        ({"token": ""}, "one word"),
        ({"min_per_line": -1}, "greater than or equal to 0"),
        ({"rates": 0.1}, "Extra inputs are not permitted"),
    ],
)
def test_invalid_params_are_refused(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        WordSwapParams(**params)


def test_token_default_is_allowed_with_any_method_and_method_case_is_ignored() -> None:
    assert WordSwapParams(method="qwerty", token="AAA").method == "qwerty"
    assert WordSwapParams(method="QWERTY").method == "qwerty"
    assert WordSwapParams(token="<unk>").token == "<unk>"
    # a dumped entry validates again (reports re-read their parameters)
    params = WordSwapParams(method="char-swap", min_per_line=1)
    assert WordSwapParams.model_validate(params.model_dump()) == params


# --- the dataset perturbation ----------------------------------------------------------------


@dataclass(frozen=True)
class _Corpus:
    lines: tuple[tuple[str, ...], ...]


class _Vocabulary:
    UNK = "<unk>"

    def __init__(self, words: Sequence[str]) -> None:
        self._words = set(words)

    def __contains__(self, word: object) -> bool:
        return word in self._words


@dataclass
class _Windows:
    """What `perturb_dataset` needs of `LanguageModelingWindows`."""

    corpus: _Corpus
    vocabulary: _Vocabulary
    perturbation_summary: dict[str, Any] | None = None

    def with_lines(self, lines: tuple[tuple[str, ...], ...]) -> _Windows:
        return _Windows(_Corpus(lines), self.vocabulary)


def _windows(vocabulary: Sequence[str]) -> _Windows:
    return _Windows(_Corpus(tuple(CORPUS)), _Vocabulary(vocabulary))


def test_perturb_dataset_swaps_the_lines_and_summarises() -> None:
    dataset = _windows(["the", "<unk>"])
    out = build_perturbation("word-swap", {}).perturb_dataset(dataset, 11)  # type: ignore[attr-defined]
    lines, stats = _swap(CORPUS, 11)
    assert out.corpus.lines == tuple(lines) and dataset.corpus.lines == tuple(CORPUS)
    assert dataset.perturbation_summary is None
    assert out.perturbation_summary == {
        "swapped_words": stats.swapped,
        "words": stats.words,
        "tokens": sum(map(len, CORPUS)),
        "eligible_words": stats.eligible,
        "realised_rate": round(stats.swapped / stats.words, 6),
        "requested_rate": 0.025,
        "method": "replace",
        "lines_with_swap": stats.lines_with_swap,
        "token_in_vocabulary": False,
        "note": "the swap token 'AAA' is not in the model's vocabulary, so it is read as <unk>",
    }


def test_summary_has_no_note_when_the_token_is_a_word() -> None:
    swap = WordSwap(WordSwapParams(token="the"))
    summary = swap.perturb_dataset(_windows(["the"]), 0).perturbation_summary
    assert summary["token_in_vocabulary"] is True and "note" not in summary
    summary = WordSwap(WordSwapParams(method="qwerty")).perturb_dataset(_windows([]), 0)
    assert "token_in_vocabulary" not in summary.perturbation_summary
    assert summary.perturbation_summary["method"] == "qwerty"


def test_batch_perturb_is_refused() -> None:
    with pytest.raises(TypeError, match="perturb_dataset"):
        WordSwap(WordSwapParams()).perturb(None, None, None, 0)  # type: ignore[arg-type]
