"""How lines of text become words: WikiText's files are already tokenised (`line.split()`), raw
text goes through `words_of` (docs/text-data.md, "Tokenising raw text: `words_of`").
"""

from __future__ import annotations

import re

# A word: \w run with an optional 's / 't / 're ... part; else one punctuation character.
WORD_PATTERN = re.compile(r"\w+(?:'\w+)?|[^\w\s]")


def words_of(line: str) -> list[str]:
    """The words of a line of raw text (see the module docstring)."""
    return WORD_PATTERN.findall(line)


def pretokenized_words(line: str) -> list[str]:
    """The words of a line that is already tokenised (WikiText): split on whitespace."""
    return line.split()
