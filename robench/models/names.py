"""Every model name robench accepts, for did-you-mean answers to an unknown MODEL.

The answer names at most a few close matches and the command that lists the rest
(`robench list models`), never a dump of unrelated names.
"""

from __future__ import annotations

import difflib

from robench.models.sources.registry import source_names
from robench.models.spec import bundled_cards

LIST_COMMAND = "robench list models"


def known_model_names() -> list[str]:
    """timm's architectures and pretrained tags (robench's zoo is registered there), robench's
    language models, shipped model cards and the source prefixes."""
    import timm

    import robench.models.zoo  # noqa: F401  (registers robench's models with timm)
    from robench.models.zoo.lm_registry import list_language_models

    names = set(timm.list_models()) | set(timm.list_models(pretrained=True))
    names |= set(list_language_models()) | set(bundled_cards())
    return sorted(names | set(source_names()))


def unknown_model_message(name: str, known: list[str] | None = None) -> str:
    """One sentence: the unknown name, up to 5 close matches (case-insensitive) among `known`
    (default: `known_model_names()`, which imports timm), and how to see every name."""
    lowered = {n.lower(): n for n in (known_model_names() if known is None else known)}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=5, cutoff=0.6)
    hint = f" Did you mean {', '.join(repr(lowered[c]) for c in close)}?" if close else ""
    return (
        f"Unknown model {name!r}.{hint} `{LIST_COMMAND} PATTERN` lists robench's, timm's and "
        "the model cards' names; hf:PATH_OR_REPO, hf-hub:ORG/NAME and local-dir:PATH load "
        "saved models (docs/models.md), and --import MODULE_OR_FILE.py registers your own."
    )
