"""How lines of text become words.

WikiText's word-level files are already tokenised (`@-@`, `@,@` and punctuation stand apart),
so a line's words are `line.split()`. Raw text (the built-in corpora, directories of plain-text
files) goes through `words_of`: a regular expression that takes runs of letters, digits and
underscores, with one inner apostrophe part (`don't`, `Python's`), as words and every other
non-space character as a word of its own. Case is kept; whitespace only separates.

    >>> words_of("Don't panic: x = f(1).")
    ["Don't", 'panic', ':', 'x', '=', 'f', '(', '1', ')', '.']
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
