"""The `word-swap` kind's parameters (docs/text-perturbations.md). The default is Elliptical
Attention's stated protocol (NeurIPS 2024, Table 1: `rate = 0.025`, every word 'AAA'); the
paper's code is `rate = 0.015`, `skip_stopwords = true`, `min_per_line = 1`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args

from pydantic import Field, field_validator, model_validator

from robench._core.registry import did_you_mean
from robench.perturbations.base import PerturbationParams, register_kind

SwapMethod = Literal[
    "replace", "char-delete", "char-insert", "char-substitute", "char-swap", "qwerty"
]

DEFAULT_TOKEN = "AAA"


@register_kind("word-swap", "robench.perturbations.text.perturbation:WordSwap")
class WordSwapParams(PerturbationParams):
    """Word Swap: a share of each line's words replaced by a token ('AAA') or misspelt."""

    unbounded: ClassVar[bool] = True
    task: ClassVar[str | None] = "language-modeling"
    display: ClassVar[str | None] = "Word Swap"

    # Share of each line's eligible words to swap, rounded stochastically per line.
    rate: float = Field(default=0.025, gt=0, le=1)
    # "replace" puts `token` in the word's place; the others edit one character (swaps.py).
    method: SwapMethod = "replace"
    # The word every swapped word becomes (method "replace" only): one word, no whitespace.
    token: str = DEFAULT_TOKEN
    # Never swap an English stopword (NLTK's list, case-insensitive); the paper's code did not.
    skip_stopwords: bool = False
    # At least this many swaps per line, capped at its eligible words (paper code's protocol: 1).
    min_per_line: int = Field(default=0, ge=0)

    @field_validator("method", mode="before")
    @classmethod
    def _known_method(cls, value: Any) -> Any:
        methods = list(get_args(SwapMethod))
        if isinstance(value, str) and value.strip().lower() in methods:
            return value.strip().lower()
        raise ValueError(did_you_mean(str(value), methods, "word-swap method"))

    @field_validator("token")
    @classmethod
    def _one_word(cls, value: str) -> str:
        if not value or any(c.isspace() for c in value):
            raise ValueError(
                f"token must be one word (non-empty, no whitespace) so that a swap keeps the "
                f"number of words, got {value!r}"
            )
        return value

    @model_validator(mode="after")
    def _token_only_for_replace(self) -> WordSwapParams:
        if self.method != "replace" and self.token != DEFAULT_TOKEN:
            raise ValueError(
                f"token {self.token!r} is only used by method 'replace', but method is "
                f"{self.method!r}; remove `token` or set method = 'replace'"
            )
        return self
