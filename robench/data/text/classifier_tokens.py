"""How a word-level text classifier reads a text, and the classes its checkpoint carries.

`encode_texts` gives every row exactly `max_length` columns, so a text's ids and logits never
depend on the other texts of its batch (docs/text-classification.md, "Fixed length"). The
class names travel in the checkpoint's string metadata under `CLASSES_KEY`, as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from robench._core.errors import CheckpointError
from robench.data.text.tokenize import words_of

if TYPE_CHECKING:
    import torch

    from robench.data.text.vocabulary import Vocabulary

PAD_ID = -1  # padding after a text's last token
CLASSES_KEY = "robench_classes"  # checkpoint metadata: JSON list of class names


def encode_texts(vocabulary: Vocabulary, texts: Sequence[str], max_length: int) -> torch.Tensor:
    """Token ids (len(texts), max_length) of `texts`: words in the vocabulary's ids, cut at
    `max_length`, then `PAD_ID`."""
    import torch

    ids = torch.full((len(texts), max_length), PAD_ID, dtype=torch.long)
    for row, text in enumerate(texts):
        encoded = vocabulary.encode(words_of(text)[:max_length])
        if encoded:
            ids[row, : len(encoded)] = torch.tensor(encoded, dtype=torch.long)
    return ids


def classes_metadata(classes: Sequence[str]) -> dict[str, str]:
    """The class names as a checkpoint metadata entry (safetensors metadata is str -> str)."""
    return {CLASSES_KEY: json.dumps(list(classes), ensure_ascii=False)}


def classes_from_metadata(metadata: dict[str, str]) -> tuple[str, ...] | None:
    """The class names `classes_metadata` stored; None when there are none."""
    raw = metadata.get(CLASSES_KEY)
    if raw is None:
        return None
    try:
        classes = json.loads(raw)
    except json.JSONDecodeError as error:
        raise CheckpointError(
            f"checkpoint metadata {CLASSES_KEY!r} is not JSON ({error}); expected a list of "
            "class names; re-save the checkpoint with `robench train`."
        ) from None
    if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
        raise CheckpointError(
            f"checkpoint metadata {CLASSES_KEY!r} is not a non-empty list of class names; "
            "re-save the checkpoint with `robench train`."
        )
    return tuple(classes)
