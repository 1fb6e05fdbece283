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

The settings of each version are the library's (`AutoAttack._set_version`, `VERSIONS`);
robench's `custom` uses `standard`'s; the parameters override them as autoattack.py does.
"""

from __future__ import annotations

from dataclasses import dataclass

from robench.perturbations.base import FORWARD_PASS, GRADIENT_PASS

DEFAULT_ITERATIONS = 100  # APGD, APGD-T and FAB
_BACKWARD = GRADIENT_PASS - FORWARD_PASS  # one more backward through a kept graph


def apgd_passes(steps: int, restarts: int, eot: int) -> int:
    """APGD in either library: the clean prediction, then (steps + 1) gradients per restart."""
    return FORWARD_PASS + GRADIENT_PASS * restarts * eot * (steps + 1)


def apgd_t_passes(steps: int, restarts: int, eot: int, targets: int) -> int:
    """APGD-T: APGD's run per target class and restart, plus a forward per run."""
    per_run = FORWARD_PASS + GRADIENT_PASS * eot * (steps + 1)
    return FORWARD_PASS + targets * restarts * per_run


def fab_passes(steps: int, restarts: int, classes: int, *, per_run: int) -> int:
    """Untargeted FAB with `per_run` forwards per run (pyautoattack's 3, torchattacks' 2)."""
    per_step = 2 * FORWARD_PASS + _BACKWARD * classes
    return FORWARD_PASS + restarts * (per_run * FORWARD_PASS + steps * per_step)


def fab_t_passes(steps: int, restarts: int, targets: int) -> int:
    """Targeted FAB: per target the clean forwards, a gradient and a prediction per step."""
    per_run = 3 * FORWARD_PASS + steps * (GRADIENT_PASS + FORWARD_PASS)
    return FORWARD_PASS + targets * restarts * per_run


def square_passes(queries: int, restarts: int, *, before: int) -> int:
    """Square with `before` forwards before its restarts (pyautoattack's 1, torchattacks' 2)."""
    return FORWARD_PASS * (before + restarts * (queries + 2))


@dataclass(frozen=True)
class _Version:
    """What one of the library's versions runs, and how often."""

    attacks: tuple[str, ...]
    checks: int  # passes before the attacks: its checks and the clean prediction
    apgd_restarts: int = 1
    fab_restarts: int = 1
    eot: int = 1


VERSIONS: dict[str, _Version] = {
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
