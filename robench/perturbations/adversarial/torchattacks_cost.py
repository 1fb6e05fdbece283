"""An upper bound on a `torchattacks.NAME` attack's model passes per sample, from its parameters,
counted against torchattacks 3.5's source in the cost model's unit (a backward alone, one
logit's gradient in a Jacobian, is 2) for the worst case in which no sample is broken early;
the rule of an attack with no row, what runs around it and the measured ratios: docs/cost.md,
"torchattacks kinds". In the formulas `classes` is the model's outputs, C x H x W one sample's
shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from robench.perturbations.adversarial.autoattack_cost import (
    apgd_passes,
    apgd_t_passes,
    fab_passes,
    fab_t_passes,
    square_passes,
)
from robench.perturbations.adversarial.torchattacks_catalogue import QUERY_COUNTS, STEP_COUNTS
from robench.perturbations.base import FORWARD_PASS, GRADIENT_PASS

_BACKWARD = GRADIENT_PASS - FORWARD_PASS  # one more backward through a kept graph
# SparseFool runs torchattacks' DeepFool at its default steps inside every one of its steps.
_SPARSEFOOL_DEEPFOOL_STEPS = 50


@dataclass(frozen=True)
class CostInput:
    """The attack's parameters (robench's names), the model's outputs and one sample's shape."""

    values: Mapping[str, Any]
    classes: int
    shape: tuple[int, ...]

    def get(self, name: str) -> int:
        return int(self.values[name])

    @property
    def n_classes(self) -> int:
        """The attack's `n_classes` (robench fills it with the model's outputs)."""
        given = self.values.get("n_classes")
        return int(given) if given is not None else self.classes


@dataclass(frozen=True)
class CostRule:
    formula: str
    passes: Callable[[CostInput], int]


def _fab(c: CostInput) -> int:
    steps, restarts = c.get("steps"), c.get("n_restarts")
    if c.values.get("multi_targeted"):
        return fab_t_passes(steps, restarts, c.n_classes - 1)
    if c.values.get("targeted"):
        return fab_t_passes(steps, restarts, 1)
    return fab_passes(steps, restarts, c.classes, per_run=2)


# torchattacks.AutoAttack's versions: the library's own settings (APGD, APGD-T and FAB at
# their default 10 steps); each attack is followed by MultiAttack's forward on its output.
_STEPS = 10
_SQUARE = square_passes(5000, 1, before=2)
_AUTOATTACK: dict[str, Callable[[int, int], list[int]]] = {
    "standard": lambda k, n: [
        apgd_passes(_STEPS, 1, 1),
        apgd_t_passes(_STEPS, 1, 1, n - 1),
        fab_t_passes(_STEPS, 1, n - 1),
        _SQUARE,
    ],
    "plus": lambda k, n: [
        *[apgd_passes(_STEPS, 5, 1)] * 2,
        fab_passes(_STEPS, 5, k, per_run=2),
        _SQUARE,
        apgd_t_passes(_STEPS, 1, 1, n - 1),
        fab_t_passes(_STEPS, 1, n - 1),
    ],
    "rand": lambda k, n: [apgd_passes(_STEPS, 1, 20)] * 2,
}


def _autoattack(c: CostInput) -> int:
    parts = _AUTOATTACK[str(c.values["version"])](c.classes, c.n_classes)
    return sum(parts) + FORWARD_PASS * len(parts)


def _onepixel(c: CostInput) -> int:
    # Differential evolution over D = pixels x (2 + C) numbers: the population evaluated at the
    # start and once per step, and the success check on the best member after each step.
    dims = c.get("eps") * (2 + c.shape[0])
    population = max(5, max(1, c.get("popsize") // dims) * dims)
    return (c.get("steps") + 1) * population + c.get("steps")


def _pixle(c: CostInput) -> int:
    # The clean probability, then per iteration a loss and a success check (one image each).
    rounds = 1 if c.values.get("update_each_iteration") else c.get("restarts")
    return FORWARD_PASS + 2 * FORWARD_PASS * rounds * c.get("max_iterations")


def _jsma(c: CostInput) -> int:
    # Two pixels per iteration, up to gamma of the C x H x W values; per iteration the
    # Jacobian (a forward, K backwards) and a prediction.
    iterations = math.ceil(math.prod(c.shape) * float(c.values["gamma"]) / 2)
    return FORWARD_PASS + iterations * (2 * FORWARD_PASS + _BACKWARD * c.classes)


def _deepfool(steps: int, classes: int) -> int:
    # Per step, one image at a time: a forward and the gradient of every output.
    return steps * (FORWARD_PASS + _BACKWARD * classes)


def _sparsefool(c: CostInput) -> int:
    # Per step: a prediction, a whole DeepFool, and one gradient at the boundary point.
    inner = _deepfool(_SPARSEFOOL_DEEPFOOL_STEPS, c.classes)
    return c.get("steps") * (FORWARD_PASS + inner + GRADIENT_PASS)


def _ead(c: CostInput) -> int:
    # The clean forward, then per search step and iteration a gradient (y_k), a forward (x_k).
    rounds = c.get("binary_search_steps") * c.get("max_iterations")
    return FORWARD_PASS + rounds * (GRADIENT_PASS + FORWARD_PASS)


def generic_passes(c: CostInput) -> int:
    """The rule of the attacks with no row in `ATTACK_COSTS` (the module docstring)."""
    steps = math.prod(int(c.values[k]) for k in STEP_COUNTS if isinstance(c.values.get(k), int))
    queries = math.prod(int(c.values[k]) for k in QUERY_COUNTS if isinstance(c.values.get(k), int))
    if any(k in c.values for k in QUERY_COUNTS):
        return FORWARD_PASS * queries * steps
    return FORWARD_PASS + GRADIENT_PASS * steps


ATTACK_COSTS: dict[str, CostRule] = {
    **dict.fromkeys(("VANILA", "GN"), CostRule("no model pass", lambda c: 0)),
    "CW": CostRule("3 x steps", lambda c: GRADIENT_PASS * c.get("steps")),
    "DeepFool": CostRule(
        "steps x (1 + 2 x classes)", lambda c: _deepfool(c.get("steps"), c.classes)
    ),
    "SparseFool": CostRule(
        f"steps x (4 + {_SPARSEFOOL_DEEPFOOL_STEPS} x (1 + 2 x classes))", _sparsefool
    ),
    **dict.fromkeys(
        ("EADL1", "EADEN"), CostRule("1 + 4 x binary_search_steps x max_iterations", _ead)
    ),
    "JSMA": CostRule("1 + ceil(C x H x W x gamma / 2) x (2 + 2 x classes)", _jsma),
    "OnePixel": CostRule(
        "(steps + 1) x max(5, max(1, popsize // D) x D) + steps, D = eps x (2 + C)", _onepixel
    ),
    "Pixle": CostRule(
        "1 + 2 x restarts x max_iterations (1 + 2 x max_iterations with update_each_iteration)",
        _pixle,
    ),
    "Square": CostRule(
        "2 + n_restarts x (n_queries + 2)",
        lambda c: square_passes(c.get("n_queries"), c.get("n_restarts"), before=2),
    ),
    "SPSA": CostRule(
        "2 x nb_iter x nb_sample",
        lambda c: 2 * FORWARD_PASS * c.get("nb_iter") * c.get("nb_sample"),
    ),
    "APGD": CostRule(
        "1 + 3 x n_restarts x eot_iter x (steps + 1)",
        lambda c: apgd_passes(c.get("steps"), c.get("n_restarts"), c.get("eot_iter")),
    ),
    "APGDT": CostRule(
        "1 + (n_classes - 1) x n_restarts x (1 + 3 x eot_iter x (steps + 1))",
        lambda c: apgd_t_passes(
            c.get("steps"), c.get("n_restarts"), c.get("eot_iter"), c.n_classes - 1
        ),
    ),
    "FAB": CostRule(
        "1 + n_restarts x (2 + steps x (2 + 2 x classes)); targeted: 1 + n_restarts x "
        "(3 + 4 x steps), times n_classes - 1 with multi_targeted",
        _fab,
    ),
    "AutoAttack": CostRule(
        "its attacks' (APGD, APGD-T, FAB, Square at the library's settings) and a forward "
        "after each",
        _autoattack,
    ),
    **{
        name: CostRule(
            "3 x steps x (N + 1)", lambda c: GRADIENT_PASS * c.get("steps") * (c.get("N") + 1)
        )
        for name in ("VMIFGSM", "VNIFGSM")
    },
}
_GENERIC = CostRule("1 + 3 x steps", generic_passes)


def cost_rule(attack: str) -> CostRule:
    """The rule of torchattacks.`attack` (the generic one when it has no row)."""
    return ATTACK_COSTS.get(attack, _GENERIC)


def cost_formula(attack: str, fields: Collection[str]) -> str:
    """The rule of torchattacks.`attack` in words; the generic rule written with the repeat
    counts the attack takes among `fields` ("1 + 3 x steps x eot_iter"; FGSM: "1 + 3")."""
    if attack in ATTACK_COSTS:
        return ATTACK_COSTS[attack].formula
    steps = [name for name in STEP_COUNTS if name in fields]
    queries = [name for name in QUERY_COUNTS if name in fields]
    return " x ".join(queries + steps if queries else ["1 + 3", *steps])


def adapter_passes(*, minimal_norm: bool, targeted: bool, fills_classes: bool) -> int:
    """The passes around the attack per sample (docs/cost.md, "torchattacks kinds")."""
    return FORWARD_PASS * (1 + 2 * minimal_norm + targeted + fills_classes)
