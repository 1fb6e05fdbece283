"""An upper bound on AutoAttack's model passes per sample, from its version and settings.

Counted against the library's code (pyautoattack), with a forward pass = 1 and a forward and
backward pass = 3, for the worst case in which every attack runs on every sample (a model no
attack breaks; the library stops attacking a sample once one attack succeeds). With n the
iterations, R the restarts, E the EOT samples, T = min(n_target_classes, K - 1) the target
classes and K the model's outputs, one sample costs:

| part | passes |
|---|---|
| the library's checks (randomness: 5, not in `rand`), clean prediction | 8 (`rand`: 3) |
| robench's probe of the number of outputs | 1 |
| the prediction after each attack | 1 per attack |
| `apgd-ce`, `apgd-dlr` | 1 + R (n + 1) E 3 |
| `apgd-t` | 1 + T R ((n + 1) E 3 + 1), E = 1 unless `eot_iter` is given |
| `fab` (a gradient of every output per iteration) | R ((2 + 2K) n + 3) + 1 |
| `fab-t` (always 1 restart) | T (4 n + 3) + 1 |
| `square` | R (queries + 2) + 1 |

The settings of each version are the library's (`AutoAttack._set_version`, `_VERSIONS`);
robench's `custom` uses `standard`'s; the parameters override them as autoattack.py does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

_GRADIENT = 3  # a forward and a backward pass
_DEFAULT_ITERATIONS = 100  # APGD, APGD-T and FAB


@dataclass(frozen=True)
class _Version:
    """What one of the library's versions runs, and how often."""

    attacks: tuple[str, ...]
    checks: int  # passes before the attacks: its checks and the clean prediction
    apgd_restarts: int = 1
    fab_restarts: int = 1
    eot: int = 1


_VERSIONS: dict[str, _Version] = {
    "standard": _Version(("apgd-ce", "apgd-t", "fab-t", "square"), checks=8),
    "plus": _Version(
        ("apgd-ce", "apgd-dlr", "fab", "square", "apgd-t", "fab-t"),
        checks=8,
        apgd_restarts=5,
        fab_restarts=5,
    ),
    "rand": _Version(("apgd-ce", "apgd-dlr"), checks=3, eot=20),
    "custom": _Version((), checks=8),
}


@dataclass(frozen=True)
class _Resolved:
    """The settings one run uses, overrides applied."""

    iterations: int
    eot: int  # APGD's
    apgd_t_eot: int
    targets: int
    classes: int
    queries: int
    apgd_restarts: int
    apgd_t_restarts: int
    fab_restarts: int
    square_restarts: int


def _apgd(s: _Resolved) -> int:
    return 1 + s.apgd_restarts * (s.iterations + 1) * s.eot * _GRADIENT


_ATTACK_PASSES: dict[str, Callable[[_Resolved], int]] = {
    "apgd-ce": _apgd,
    "apgd-dlr": _apgd,
    "apgd-t": lambda s: (
        1 + s.targets * s.apgd_t_restarts * ((s.iterations + 1) * s.apgd_t_eot * _GRADIENT + 1)
    ),
    "fab": lambda s: s.fab_restarts * ((2 + 2 * s.classes) * s.iterations + 3) + 1,
    "fab-t": lambda s: s.targets * (4 * s.iterations + 3) + 1,
    "square": lambda s: s.square_restarts * (s.queries + 2) + 1,
}


class AutoAttackSettings(Protocol):
    """What the count reads of `params.AutoAttackParams` (a protocol: params imports this)."""

    @property
    def version(self) -> str: ...
    @property
    def attacks(self) -> Sequence[str] | None: ...
    @property
    def n_restarts(self) -> int | None: ...
    @property
    def n_iter(self) -> int | None: ...
    @property
    def eot_iter(self) -> int | None: ...
    @property
    def n_target_classes(self) -> int: ...
    @property
    def n_queries(self) -> int: ...


def autoattack_passes(params: AutoAttackSettings, classes: int) -> int:
    """Passes per sample of one AutoAttack run (robench's re-run of the model not included)."""
    version = _VERSIONS[params.version]
    attacks = params.attacks or version.attacks
    restarts = params.n_restarts
    resolved = _Resolved(
        iterations=params.n_iter or _DEFAULT_ITERATIONS,
        eot=params.eot_iter or version.eot,
        apgd_t_eot=params.eot_iter or 1,  # the library's `rand` sets APGD's alone
        targets=max(min(params.n_target_classes, classes - 1), 1),
        classes=classes,
        queries=params.n_queries,
        apgd_restarts=restarts or version.apgd_restarts,
        apgd_t_restarts=restarts or 1,
        fab_restarts=restarts or version.fab_restarts,
        square_restarts=restarts or 1,
    )
    probe = 1  # robench asks the model for its number of outputs
    per_attack = sum(_ATTACK_PASSES[name](resolved) + 1 for name in attacks)
    return version.checks + probe + per_attack
