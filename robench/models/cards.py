"""Check a model card without building its model (`robench validate`; docs/validate.md): the
light check needs no torch or timm, `deep=True` imports timm and robench's zoo to look the
architecture up (the caller loads plugins first: `robench._core.plugins.load_plugins`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from robench._core.errors import ConfigError
from robench.models.hashing import sha256_file
from robench.models.spec import ModelCard, read_card
from robench.models.zoo_names import LANGUAGE_MODELS, ZOO_MODELS


@dataclass(frozen=True)
class CardCheck:
    """A card that passed, and what the check could not verify (one sentence each)."""

    card: ModelCard
    notes: tuple[str, ...] = ()


def check_card(path: Path, *, deep: bool = False) -> CardCheck:
    """Validate the model card (TOML) at `path`; raise `ConfigError` on the first problem.
    `deep`: look the architecture up in timm's registry (imports timm and torch)."""
    card = read_card(path)
    where = f"model card {path}"
    notes = _check_architecture(card.architecture, where, deep)
    _check_checkpoint(card, path, where)
    return CardCheck(card, notes)


def _check_architecture(architecture: str | None, where: str, deep: bool) -> tuple[str, ...]:
    if architecture is None:
        raise ConfigError(
            f'{where} names no architecture; add `architecture = "MODEL"` with a registered '
            "model name (see `robench list models`)."
        )
    if architecture in ZOO_MODELS or architecture in LANGUAGE_MODELS:
        return ()
    if deep:
        _check_registered_in_timm(architecture, where)
        return ()
    close = difflib.get_close_matches(
        architecture, [*ZOO_MODELS, *LANGUAGE_MODELS], n=1, cutoff=0.9
    )
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"architecture {architecture!r} is not one of robench's models{hint}; it was not "
        "looked up in timm's registry: run `robench validate --deep` to check it.",
    )


def _check_registered_in_timm(architecture: str, where: str) -> None:
    import timm

    import robench.models.zoo  # noqa: F401  (registers robench's models with timm)
    from robench.models.zoo.lm_registry import is_language_model

    if not timm.is_model(architecture) and not is_language_model(architecture):
        from robench.models.names import unknown_model_message

        raise ConfigError(f"{where}: {unknown_model_message(architecture)}")


def _check_checkpoint(card: ModelCard, path: Path, where: str) -> None:
    if card.checkpoint is None:
        if card.checkpoint_sha256 is not None:
            raise ConfigError(
                f"{where} gives checkpoint_sha256 but no checkpoint; add `checkpoint = "
                '"FILE"` (relative to the card) or remove the hash.'
            )
        return
    checkpoint = path.parent / card.checkpoint
    if not checkpoint.is_file():
        raise ConfigError(
            f"{where}: checkpoint {checkpoint} does not exist; fix `checkpoint` (a path "
            "relative to the card)."
        )
    if card.checkpoint_sha256 is not None:
        actual = sha256_file(checkpoint)
        if actual != card.checkpoint_sha256:
            raise ConfigError(
                f"{where}: checkpoint {checkpoint} has sha256 {actual[:12]}..., but the card "
                f"expects {card.checkpoint_sha256[:12]}...; the file changed, or update "
                "`checkpoint_sha256`."
            )
