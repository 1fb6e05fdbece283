"""`Vocabulary`: the words a language model predicts, id = position in the word list.

Built from the training split, carried in a checkpoint's metadata: docs/text-data.md,
"Vocabulary".
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from robench._core.errors import CheckpointError, DataError

UNK = "<unk>"
EOS = "<eos>"
# Specials first, in id order.
SPECIALS = (EOS, UNK)
# Key of the vocabulary in a checkpoint's (string-valued) metadata.
METADATA_KEY = "robench_vocabulary"
METADATA_FORMAT = 1


@dataclass(frozen=True)
class Vocabulary:
    """An ordered word list; a word's id is its position. Always holds `<eos>` and `<unk>`."""

    # The words; position = id.
    words: tuple[str, ...]
    _ids: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids = {word: i for i, word in enumerate(self.words)}
        if len(ids) != len(self.words):
            repeated = sorted(w for w, n in Counter(self.words).items() if n > 1)
            raise ValueError(f"vocabulary words must be unique; repeated: {repeated[:5]}")
        missing = [s for s in SPECIALS if s not in ids]
        if missing:
            raise ValueError(f"vocabulary must contain {' and '.join(SPECIALS)}; missing {missing}")
        object.__setattr__(self, "_ids", ids)

    @classmethod
    def build(
        cls, lines: Iterable[Sequence[str]], *, min_count: int = 1, max_size: int | None = None
    ) -> Vocabulary:
        """The vocabulary of `lines` (usually a training split); ids, `min_count` and `max_size`:
        docs/text-data.md, "Vocabulary"."""
        if min_count < 1:
            raise DataError(f"min_count {min_count} is below 1; pass a count of at least 1.")
        if max_size is not None and max_size < len(SPECIALS):
            raise DataError(
                f"max_size {max_size} leaves no room for {' and '.join(SPECIALS)}; pass at "
                f"least {len(SPECIALS)}, or leave it out for no limit."
            )
        counts = Counter(word for line in lines for word in line)
        ranked = sorted(
            (w for w, n in counts.items() if n >= min_count and w not in SPECIALS),
            key=lambda w: (-counts[w], w),
        )
        if max_size is not None:
            ranked = ranked[: max_size - len(SPECIALS)]
        return cls((*SPECIALS, *ranked))

    @property
    def unk_id(self) -> int:
        return self._ids[UNK]

    @property
    def eos_id(self) -> int:
        return self._ids[EOS]

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self._ids

    def id_of(self, word: str) -> int:
        """The word's id; `<unk>`'s id for a word outside the vocabulary."""
        return self._ids.get(word, self.unk_id)

    def encode(self, words: Iterable[str]) -> list[int]:
        """Ids of `words`; words outside the vocabulary get `<unk>`'s id."""
        get, unk = self._ids.get, self.unk_id
        return [get(word, unk) for word in words]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """The words of `ids` (IndexError for an id outside 0..len-1)."""
        return [self.words[i] for i in ids]

    @property
    def sha256(self) -> str:
        """Hex sha256 of the word list as compact JSON (UTF-8): stable across runs and machines."""
        return hashlib.sha256(_words_json(self.words).encode("utf-8")).hexdigest()

    def to_metadata(self) -> dict[str, str]:
        """The vocabulary as a checkpoint metadata entry (safetensors metadata is str -> str)."""
        payload = {"format": METADATA_FORMAT, "words": list(self.words)}
        return {METADATA_KEY: json.dumps(payload, ensure_ascii=False, separators=(",", ":"))}

    @classmethod
    def from_metadata(cls, metadata: dict[str, str]) -> Vocabulary | None:
        """The vocabulary stored by `to_metadata`; None when `metadata` holds none."""
        raw = metadata.get(METADATA_KEY)
        if raw is None:
            return None
        fix = "re-save the checkpoint with robench so it carries its vocabulary"
        try:
            payload = json.loads(raw)
        except (TypeError, json.JSONDecodeError) as error:
            raise CheckpointError(
                f"checkpoint metadata {METADATA_KEY!r} is not JSON ({error}); expected "
                f'{{"format": 1, "words": [...]}}; {fix}.'
            ) from None
        if not isinstance(payload, dict) or payload.get("format") != METADATA_FORMAT:
            found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
            raise CheckpointError(
                f"checkpoint metadata {METADATA_KEY!r} has format {found!r}; this robench reads "
                f"format {METADATA_FORMAT}; upgrade robench or {fix}."
            )
        words = payload.get("words")
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise CheckpointError(
                f"checkpoint metadata {METADATA_KEY!r} has no list of word strings under "
                f'"words"; {fix}.'
            )
        try:
            return cls(tuple(words))
        except ValueError as error:
            raise CheckpointError(
                f"checkpoint metadata {METADATA_KEY!r} holds an invalid vocabulary ({error}); "
                f"{fix}."
            ) from None

    def __repr__(self) -> str:
        return f"Vocabulary(words={len(self)}, sha256={self.sha256[:12]})"


def _words_json(words: Sequence[str]) -> str:
    return json.dumps(list(words), ensure_ascii=False, separators=(",", ":"))
