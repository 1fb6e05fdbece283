"""Word Swap on lines of words: which words may be swapped, how many, and what a swap does.

Pure Python (no torch). Line `i` draws from its own `random.Random(derive_seed(seed,
"word-swap", i))`, so its result never depends on the other lines or the batching; how many
words per line and the methods: docs/text-perturbations.md.
"""

from __future__ import annotations

import math
import random
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from robench._core.seeding import derive_seed
from robench.perturbations.text.params import WordSwapParams

# Special tokens of tokenised corpora (`<unk>`, `<eos>`, `<pad>`): never swapped.
_SPECIAL = re.compile(r"<[^<>\s]+>")
# The end-of-line marker is not a word of the text: it is left out of the word count.
EOS = "<eos>"

# Letter keys of a QWERTY keyboard, row by row; each row sits half a key right of the one above.
_QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _qwerty_neighbours() -> dict[str, str]:
    """Each letter -> the letters on the keys touching it (same row, and the two above and
    below that the half-key stagger puts next to it)."""
    neighbours: dict[str, str] = {}
    for r, row in enumerate(_QWERTY_ROWS):
        for c, key in enumerate(row):
            near = [(r, c - 1), (r, c + 1), (r - 1, c), (r - 1, c + 1), (r + 1, c - 1), (r + 1, c)]
            neighbours[key] = "".join(
                _QWERTY_ROWS[rr][cc]
                for rr, cc in near
                if 0 <= rr < len(_QWERTY_ROWS) and 0 <= cc < len(_QWERTY_ROWS[rr])
            )
    return neighbours


# 'a' -> "sqwz", 'g' -> "fhtyvb", ...: the keyboard table "qwerty" swaps draw from.
QWERTY_NEIGHBOURS: dict[str, str] = _qwerty_neighbours()


@cache
def stopwords() -> frozenset[str]:
    """NLTK's English stopwords (lower case), from the package's stopwords.txt."""
    text = (
        resources.files("robench.perturbations.text")
        .joinpath("stopwords.txt")
        .read_text(encoding="utf-8")
    )
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


def is_stopword(word: str) -> bool:
    """Case-insensitive; a clitic ("'s", "'ll") counts as its stopword ("s", "ll")."""
    key = word.lower()
    return key in stopwords() or key.strip("'") in stopwords()


def is_word(word: str) -> bool:
    """A word a swap may touch: has a letter or digit, and is not a `<...>` special token."""
    return any(c.isalnum() for c in word) and not _SPECIAL.fullmatch(word)


# --- the methods: (can this word be swapped, the swap) -------------------------------------


def _delete(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    return word[:i] + word[i + 1 :]


def _insert(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word) + 1)
    return word[:i] + rng.choice(string.ascii_lowercase) + word[i:]


def _substitute(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    letters = [c for c in string.ascii_lowercase if c != word[i].lower()]
    return word[:i] + rng.choice(letters) + word[i + 1 :]


def _swap_positions(word: str) -> list[int]:
    return [i for i in range(len(word) - 1) if word[i] != word[i + 1]]


def _swap(word: str, rng: random.Random) -> str:
    i = rng.choice(_swap_positions(word))
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _letter_positions(word: str) -> list[int]:
    return [i for i, c in enumerate(word) if c in string.ascii_letters]


def _qwerty(word: str, rng: random.Random) -> str:
    i = rng.choice(_letter_positions(word))
    key = rng.choice(QWERTY_NEIGHBOURS[word[i].lower()])
    return word[:i] + (key.upper() if word[i].isupper() else key) + word[i + 1 :]


@dataclass(frozen=True)
class _Method:
    applies: Callable[[str], bool]  # True when the method can change this (eligible) word
    edit: Callable[[str, random.Random], str]  # the swapped word, drawing from the line's RNG


# The character-level methods; "replace" is the token and needs no table entry.
_CHAR_METHODS: dict[str, _Method] = {
    "char-delete": _Method(lambda w: len(w) >= 2, _delete),
    "char-insert": _Method(lambda w: True, _insert),
    "char-substitute": _Method(lambda w: True, _substitute),
    "char-swap": _Method(lambda w: bool(_swap_positions(w)), _swap),
    "qwerty": _Method(lambda w: bool(_letter_positions(w)), _qwerty),
}


# --- lines -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SwapStats:
    tokens: int  # every token of the lines except the `<eos>` marker (punctuation included)
    words: int  # tokens with a letter or digit that are not `<...>` specials (`is_word`)
    eligible: int  # words the method could have swapped (see `is_word`, the method, stopwords)
    swapped: int  # words changed
    lines: int
    lines_with_swap: int  # lines with at least one swapped word

    @property
    def realised_rate(self) -> float:
        """Swapped / words (`is_word`, TextAttack's notion): the paper's "2.5% of words". With
        `skip_stopwords` it falls below `rate`, which applies to eligible words."""
        return self.swapped / self.words if self.words else 0.0

    @property
    def swapped_per_eligible(self) -> float:
        """Swapped / eligible words: what `rate` (and `min_per_line`) aim at."""
        return self.swapped / self.eligible if self.eligible else 0.0


def _eligible(word: str, params: WordSwapParams) -> bool:
    if not is_word(word) or (params.skip_stopwords and is_stopword(word)):
        return False
    if params.method == "replace":
        return word != params.token  # already the token: swapping would change nothing
    return _CHAR_METHODS[params.method].applies(word)


def _swap_line(
    words: Sequence[str], params: WordSwapParams, rng: random.Random
) -> tuple[tuple[str, ...], int]:
    """The line with its swaps, and how many eligible words it had."""
    eligible = [i for i, word in enumerate(words) if _eligible(word, params)]
    n = len(eligible)
    k = math.floor(params.rate * n + rng.random())
    k = min(max(k, params.min_per_line), n)
    out = list(words)
    for i in sorted(rng.sample(eligible, k)):
        if params.method == "replace":
            out[i] = params.token
        else:
            out[i] = _CHAR_METHODS[params.method].edit(words[i], rng)
    return tuple(out), n


def swap_lines(
    lines: Sequence[Sequence[str]],
    params: WordSwapParams,
    seed: int,
    *,
    line_numbers: Sequence[int] | None = None,
) -> tuple[list[tuple[str, ...]], SwapStats]:
    """Swap words of every line; line `line_numbers[j]` (default `j`) is seeded with
    `derive_seed(seed, "word-swap", line number)`, so a part of a corpus given its corpus
    line numbers is swapped exactly as in the whole corpus."""
    numbers = range(len(lines)) if line_numbers is None else line_numbers
    if len(numbers) != len(lines):
        raise ValueError(f"got {len(numbers)} line numbers for {len(lines)} lines")
    swapped_lines: list[tuple[str, ...]] = []
    tokens = words = eligible = swapped = with_swap = 0
    for number, line in zip(numbers, lines, strict=True):
        rng = random.Random(derive_seed(seed, "word-swap", number))
        new, n_eligible = _swap_line(line, params, rng)
        changed = sum(a != b for a, b in zip(line, new, strict=True))
        swapped_lines.append(new)
        tokens += sum(word != EOS for word in line)
        words += sum(map(is_word, line))
        eligible += n_eligible
        swapped += changed
        with_swap += changed > 0
    stats = SwapStats(tokens, words, eligible, swapped, len(lines), with_swap)
    return swapped_lines, stats
