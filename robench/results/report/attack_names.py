"""Perturbation kind -> its name in figures ("PGD-20", "AutoAttack (lite)"), one table.

Each kind's registration fills it (`robench.perturbations.base.register_kind` adds the
parameter class's `display_name`), so a new kind cannot be left out; results, below the
perturbations in the import order, read the table without importing them. A kind not
registered in this process (a report of a plugin's attack) shows its kind name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

DisplayName = Callable[[Mapping[str, Any]], str]

ATTACK_NAMES: dict[str, DisplayName] = {}


def attack_name(kind: str, params: Mapping[str, Any]) -> str:
    """The figure name of a result of `kind` with its report `params`."""
    name = ATTACK_NAMES.get(kind)
    shown = kind if name is None else name(params)
    surrogate = params.get("surrogate")  # a transfer attack: "PGD-20 from vit_nano_fmnist"
    if isinstance(surrogate, Mapping) and surrogate.get("name"):
        shown += f" from {surrogate['name']}"
    return shown
