"""What robench knows about each torchattacks attack that its source does not say: its threat
model (`Bounded`, `MinimalNorm`, `Noise`), which parameter is its budget, and why a class
cannot run (`REFUSED`); the classes by threat model: docs/formats.md, "torchattacks attacks".
An attack a later torchattacks adds that this table does not know is refused until a row is
added.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bounded:
    """Inside a ball of radius `eps` in one of `norms` (keys of threat_models.NORMS)."""

    norms: tuple[str, ...]
    budget: str = "eps"  # torchattacks' name of the budget parameter


@dataclass(frozen=True)
class MinimalNorm:
    """The smallest adversarial perturbation found, measured in `norm`."""

    norm: str


@dataclass(frozen=True)
class Noise:
    """No ball, no search: the output is only checked to be finite and in [0, 1]."""


Threat = Bounded | MinimalNorm | Noise

_LINF = Bounded(("linf",))
_L2 = Bounded(("l2",))

_LINF_ATTACKS = (
    "FGSM", "BIM", "RFGSM", "PGD", "EOTPGD", "FFGSM", "TPGD", "MIFGSM", "UPGD", "DIFGSM",
    "TIFGSM", "Jitter", "NIFGSM", "PGDRS", "SINIFGSM", "VMIFGSM", "VNIFGSM", "SPSA",
)  # fmt: skip

THREATS: dict[str, Threat] = {
    "VANILA": Noise(),
    "GN": Noise(),
    # The L-inf attacks whose budget is `eps`.
    **dict.fromkeys(_LINF_ATTACKS, _LINF),
    "PIFGSM": Bounded(("linf",), budget="max_epsilon"),
    "PIFGSMPP": Bounded(("linf",), budget="max_epsilon"),
    "APGD": Bounded(("linf", "l2")),
    "APGDT": Bounded(("linf", "l2")),
    "AutoAttack": Bounded(("linf", "l2")),
    "Square": Bounded(("linf", "l2")),
    # FAB's L1 mode fails inside torchattacks 3.5 (an unassigned variable in its projection).
    "FAB": Bounded(("linf", "l2")),
    "PGDL2": _L2,
    "PGDRSL2": _L2,
    "OnePixel": Bounded(("l0",), budget="pixels"),
    "CW": MinimalNorm("l2"),
    "DeepFool": MinimalNorm("l2"),
    "EADEN": MinimalNorm("l2"),  # an elastic-net rule, its size in L2 where torchattacks files it
    "EADL1": MinimalNorm("l1"),
    "SparseFool": MinimalNorm("l0"),
    "JSMA": MinimalNorm("l0"),
    "Pixle": MinimalNorm("l0"),
}

REFUSED: dict[str, str] = {
    "MultiAttack": (
        "it runs a list of other attack objects one after another, which a suite entry "
        "cannot hold; list each attack as its own [[perturbations]] entry instead"
    ),
    "LGV": (
        "it first fine-tunes copies of the model on a training DataLoader (`trainloader`), "
        "which a suite entry cannot hold; it is a transfer attack with its own training loop"
    ),
}

# Limits of the library that fail inside an attack, named when it does.
LIMITS: dict[str, str] = {
    "JSMA": (
        "untargeted, JSMA aims at class (label + 1) mod 10, so the model needs at least 10 "
        'outputs; with fewer, use targeted = "random"'
    ),
    **dict.fromkeys(("EADEN", "EADL1"), "with abort_early = true it needs max_iterations >= 10"),
}

# How far outside [0, 1] float rounding may put an output (docs/formats.md, `rounding_clip`).
ROUNDING_TOLERANCE = 1e-4

# Parameters with an integer default that take real values (CW's c = 1, EAD's kappa = 0):
# a suite may write 0.5 for them. Other integer defaults (steps, restarts) take integers.
REAL_VALUED = frozenset({"c", "kappa", "lam", "nsig", "scale"})


@dataclass(frozen=True)
class Bound:
    """The values a parameter's meaning allows (pydantic's `ge`, `gt`, `le`, `lt`)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None

    def constraints(self) -> dict[str, float]:
        return {k: v for k, v in vars(self).items() if v is not None}


_COUNT = Bound(ge=1)  # a number of steps, queries, restarts or samples: at least one
_POSITIVE = Bound(gt=0)  # a step size, constant or scale: zero or less means no attack
_NON_NEGATIVE = Bound(ge=0)  # a margin, decay or noise level: zero switches it off
_PROBABILITY = Bound(ge=0, le=1)
_FRACTION = Bound(gt=0, le=1)

# Parameters that multiply the number of gradient steps, and those that count forward-only
# queries (torchattacks_cost's rule for an attack with no row of its own).
STEP_COUNTS = (
    "steps", "nb_iter", "max_iterations", "binary_search_steps", "num_iter_set",
    "n_restarts", "restarts", "eot_iter", "N", "m", "noise_batch_size", "popsize",
)  # fmt: skip
QUERY_COUNTS = ("n_queries", "nb_sample")

# Bounds by torchattacks parameter name (a name means the same across its classes): without
# them `steps = -1` ran no step and reported clean accuracy as robust.
BOUNDS: dict[str, Bound] = {
    **dict.fromkeys(
        (
            *STEP_COUNTS, *QUERY_COUNTS, "batch_max", "max_batch_size", "inf_batch",
            "len_kernel", "n_grad", "epochs", "nb_models_epoch",
        ),
        _COUNT,
    ),
    **dict.fromkeys(
        (
            "c", "alpha", "alpha_max", "lr", "delta", "eps_for_division", "initial_const",
            "amplification", "eta", "nsig", "scale", "theta", "lam", "resize_rate",
        ),
        _POSITIVE,
    ),
    **dict.fromkeys(
        (
            "kappa", "beta", "decay", "momentum", "overshoot", "std", "noise_sd", "wd",
            "project_factor",
        ),
        _NON_NEGATIVE,
    ),
    **dict.fromkeys(("prob", "diversity_prob"), _PROBABILITY),
    **dict.fromkeys(("p_init", "gamma", "rho"), _FRACTION),
}  # fmt: skip

# The values a string parameter takes, by (attack, parameter), as each class's code tests them
# (`if self.loss == "ce"` ... with no else: any other string silently computed nothing).
CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("APGD", "loss"): ("ce", "dlr"),
    ("UPGD", "loss"): ("ce", "dlr", "margin"),
    ("Square", "loss"): ("ce", "margin"),
    ("AutoAttack", "version"): ("standard", "plus", "rand"),
    ("TIFGSM", "kernel_name"): ("gaussian", "linear", "uniform"),
    ("PGDRS", "noise_type"): ("guassian", "uniform"),  # torchattacks' spelling
    ("PGDRSL2", "noise_type"): ("guassian", "uniform"),
    ("Pixle", "pixel_mapping"): (
        "random", "similarity", "similarity_random", "distance", "distance_random",
    ),
}  # fmt: skip

# Parameters robench fills when a suite leaves them out (docs/formats.md, "torchattacks attacks").
FILLED_BY_ROBENCH = {
    "seed": "the batch's seed (from the run's --seed)",
    "n_classes": "the model's number of outputs",
}

# The targeted modes of torchattacks' `set_mode_targeted_*`, by robench's name.
TARGETED_MODES = {
    "random": "set_mode_targeted_random",
    "least-likely": "set_mode_targeted_least_likely",
}


def refusal(name: str, known: bool = True) -> str | None:
    """Why torchattacks.`name` cannot run from a suite, or None when it can."""
    if name in REFUSED:
        return REFUSED[name]
    if name not in THREATS:
        return (
            "robench's catalogue (robench/perturbations/adversarial/torchattacks_catalogue.py) "
            "does not know its threat model yet, so its outputs could not be checked; add a row "
            "to THREATS"
        )
    if not known:
        return "robench could not read its parameters from torchattacks' source"
    return None
