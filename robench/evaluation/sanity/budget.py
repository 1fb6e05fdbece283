"""The sanity battery's budget: what each check runs, what that costs, and the strongest
budget under a cap.

Costs are model passes over one sample each (`PerturbationParams.passes_per_sample`), never a
clock: the same command gives the same budget, and the report states it
(`Report.sanity_budget`). The modes, the costs, the longer steps of short attacks and how
`auto` fits its cap: docs/sanity.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from robench._core.errors import ConfigError
from robench.evaluation.suites import PlannedPerturbation
from robench.perturbations import PERTURBATIONS
from robench.results.report.schema import SanityBudgetInfo

CAP_FACTOR = 3  # auto: the battery costs at most this many times the suite
EPS_SWEEP = (0.25, 0.5, 1.0, 2.0)  # the sweep's budgets, as multiples of eps
PGD_STEP = 0.25  # PGD's step as a share of eps (Madry et al.'s rule) ...
PGD_TRAVEL = 2.5  # ... or longer, so that its steps add up to this many eps
# The unbounded attack's step as a share of the image cube's radius, or longer, so that its
# steps add up to UNBOUNDED_TRAVEL radii.
UNBOUNDED_STEP = 0.05
UNBOUNDED_TRAVEL = 1.5
SPSA_LR = 0.01  # SPSA's Adam learning rate (pixel units) ...
SPSA_TRAVEL = 2.0  # ... or larger, so that its steps add up to this many eps
EPS0_STEPS = 5  # PGD at eps 0 (it returns the image itself: no gradient is taken)
# The gradients check: two forwards (randomness) and a gradient on up to a batch of samples.
GRADIENT_CHECK_PASSES = 5

GRADIENTS = "gradients_and_determinism"
EPS0, SWEEP = "eps0_equals_clean", "monotone_in_eps"
UNBOUNDED, BLACK_BOX = "unbounded_attack_breaks_model", "black_box_not_stronger"
EOT, ADAPTIVE = "randomized_eot", "elliptical_gradients_through_m"
# The one-step attack of each threat model: (its kind, the name of the check against PGD).
ONE_STEP: dict[str, tuple[str, str]] = {
    "linf": ("fgsm", "pgd_at_least_fgsm"),
    "l2": ("fgm", "pgd_at_least_fgm"),
}
_ANY_EPS = 0.5  # costs are the same for every eps > 0; this stands for "some eps"


@dataclass(frozen=True)
class SanityBudget:
    """How many samples the battery runs on and how hard its attacks try."""

    samples: int | None = None  # the first N samples it is given; None: all of them
    pgd_steps: int = 20  # PGD of the eps sweep (and of the EOT and adaptive runs)
    unbounded_steps: int = 50  # PGD of the unbounded attack
    spsa_steps: int = 20  # SPSA iterations
    spsa_directions: int = 64  # SPSA directions per gradient estimate (2 queries each)
    eot_iterations: int = 20  # EOT samples per gradient of AutoAttack rand
    # Checks that do not run (their names); leaving out the clean or sweep checks leaves out
    # every attack check, since they supply the numbers the others compare with.
    left_out: tuple[str, ...] = ()


FULL_BUDGET = SanityBudget()
QUICK_BUDGET = SanityBudget(
    pgd_steps=10, unbounded_steps=30, spsa_steps=5, spsa_directions=16, eot_iterations=5
)
# Where `auto` stops shrinking (docs/sanity.md): samples first, down to 64, then steps and
# queries down to these; below them it leaves out SPSA, then runs on fewer samples.
FLOOR_BUDGET = SanityBudget(
    samples=64, pgd_steps=3, unbounded_steps=5, spsa_steps=4, spsa_directions=8, eot_iterations=2
)
_STRENGTHS = ("pgd_steps", "unbounded_steps", "spsa_steps", "spsa_directions", "eot_iterations")


@dataclass(frozen=True)
class AttackRun:
    """One attack run of the battery: its label (which seeds its batches), kind and params."""

    label: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    adaptive: bool = False  # gradients through the model's hook (Elliptical Attention's M)

    def passes_per_sample(self) -> int:
        params = PERTURBATIONS.get(self.kind).Params.model_validate(self.params)
        return params.passes_per_sample()


def _pgd(label: str, eps: float, norm: str, steps: int, adaptive: bool = False) -> AttackRun:
    step_size = max(eps * max(PGD_STEP, PGD_TRAVEL / steps), 1e-6)
    params = {"eps": eps, "norm": norm, "steps": steps, "step_size": step_size}
    return AttackRun(label, "pgd", params, adaptive)


def battery_runs(
    budget: SanityBudget,
    *,
    eps: float,
    norm: str,
    radius: float = 1.0,
    adaptive: bool = False,
    randomized: bool = False,
) -> dict[str, tuple[AttackRun, ...]]:
    """The checks `budget` runs, in order, each with its attack runs (the gradients check has
    none: it costs GRADIENT_CHECK_PASSES). `radius` is the image cube's (the unbounded
    attack's eps); `adaptive`: the model lets gradients through M; `randomized`: the model
    is randomized (EOT runs). PGD at 1 x eps is the sweep's run, reused by later checks."""
    p, u = budget.pgd_steps, budget.unbounded_steps
    kind, one_step = ONE_STEP[norm]
    step_size = radius * max(UNBOUNDED_STEP, UNBOUNDED_TRAVEL / u)
    unbounded = {"eps": radius, "norm": norm, "steps": u, "step_size": step_size}
    eps0 = {"eps": 0.0, "norm": norm, "steps": EPS0_STEPS, "step_size": 1 / 255}
    runs: dict[str, tuple[AttackRun, ...]] = {
        EPS0: (AttackRun("clean", "clean"), AttackRun("pgd-eps0", "pgd", eps0)),
        SWEEP: tuple(_pgd(f"pgd-sweep-{f}", f * eps, norm, p) for f in EPS_SWEEP),
        one_step: (AttackRun(kind, kind, {"eps": eps}),),
        UNBOUNDED: (AttackRun("pgd-unbounded", "pgd", unbounded),),
    }
    if norm == "linf":  # SPSA has no L2 form
        spsa = {
            "eps": eps,
            "steps": budget.spsa_steps,
            "nb_sample": budget.spsa_directions,
            "lr": max(SPSA_LR, SPSA_TRAVEL * eps / budget.spsa_steps),
        }
        runs[BLACK_BOX] = (AttackRun("spsa", "spsa", spsa),)
    runs[GRADIENTS] = ()
    if randomized:
        eot = {
            "eps": eps,
            "norm": norm,
            "version": "rand",
            "eot_iter": budget.eot_iterations,
            "n_iter": p,
        }
        runs[EOT] = (AttackRun("autoattack-rand", "autoattack", eot),)
    if adaptive:
        runs[ADAPTIVE] = (_pgd("pgd-through-m", eps, norm, p, adaptive=True),)
    if {EPS0, SWEEP} & set(budget.left_out):  # the others compare with their numbers
        return {GRADIENTS: ()} if GRADIENTS not in budget.left_out else {}
    return {name: r for name, r in runs.items() if name not in budget.left_out}


def check_costs(
    budget: SanityBudget,
    *,
    norm: str,
    adaptive: bool = False,
    randomized: bool = False,
    eps: float | None = None,
) -> dict[str, int]:
    """Model passes per sample of each check `budget` runs."""
    runs = battery_runs(
        budget, eps=eps or _ANY_EPS, norm=norm, adaptive=adaptive, randomized=randomized
    )
    return {
        name: sum(run.passes_per_sample() for run in check) if check else GRADIENT_CHECK_PASSES
        for name, check in runs.items()
    }


def battery_cost(
    budget: SanityBudget,
    norm: str,
    adaptive: bool = False,
    *,
    randomized: bool = False,
    eps: float | None = None,
) -> int:
    """Model passes of the whole battery on `budget.samples` samples (an upper bound)."""
    if budget.samples is None:
        raise ValueError("battery_cost needs a budget with its number of samples")
    per_sample = check_costs(budget, norm=norm, adaptive=adaptive, randomized=randomized, eps=eps)
    return budget.samples * sum(per_sample.values())


def suite_cost(
    plan: Sequence[PlannedPerturbation], samples: Mapping[str, int], classes: int = 10
) -> int:
    """Model passes of a suite's results: each planned entry's passes per sample times its
    samples (`samples`: result label -> samples evaluated; absent labels count 0)."""
    return sum(p.params.passes_per_sample(classes) * samples.get(p.label, 0) for p in plan)


def _levels(start: SanityBudget, floor: SanityBudget, ratio: float = 0.8) -> Iterator[SanityBudget]:
    """`start`, then every strength x 0.8, 0.64, ... (never below the floor) until all sit on
    their floors: each level is weaker than or equal to the previous in every strength."""
    k = 0
    while True:
        values = {}
        for name in _STRENGTHS:
            top, low = getattr(start, name), getattr(floor, name)
            values[name] = max(min(low, top), round(top * ratio**k))
        yield replace(start, **values)
        if all(values[n] == min(getattr(floor, n), getattr(start, n)) for n in _STRENGTHS):
            return
        k += 1


def fit_budget(
    cap_passes: int,
    available_samples: int,
    *,
    norm: str = "linf",
    adaptive: bool = False,
    randomized: bool = False,
    eps: float | None = None,
    start: SanityBudget = FULL_BUDGET,
    floor: SanityBudget = FLOOR_BUDGET,
) -> SanityBudget:
    """The strongest budget whose battery costs at most `cap_passes` on at most
    `available_samples` samples, shrunk in the order docs/sanity.md gives ("How `auto` fits
    the budget"). The cost never exceeds the cap, and a larger cap never gives a weaker
    budget in any respect."""
    if available_samples < 1:
        raise ValueError(f"the battery needs at least one sample, got {available_samples}")
    top = available_samples if start.samples is None else min(start.samples, available_samples)
    low = min(top, floor.samples or 1)
    flags: dict[str, Any] = dict(norm=norm, adaptive=adaptive, randomized=randomized, eps=eps)

    def most_samples(budget: SanityBudget, fewest: int, most: int) -> SanityBudget | None:
        n = min(most, cap_passes // max(sum(check_costs(budget, **flags).values()), 1))
        return replace(budget, samples=n) if n >= fewest else None

    levels = list(_levels(start, floor))
    for number, level in enumerate(levels):  # the first on up to `top` samples, then `low`
        found = most_samples(level, low, top if number == 0 else low)
        if found is not None:
            return found
    floors = levels[-1]
    # Even the floors do not fit: leave out SPSA, then run on fewer samples.
    black_box = (BLACK_BOX,) if norm == "linf" else ()
    found = most_samples(replace(floors, left_out=black_box), 1, low)
    if found is not None:
        return found
    # Not one sample of the attacks fits: the gradients check alone, else nothing.
    attacks = tuple(name for name in check_costs(floors, **flags) if name != GRADIENTS)
    found = most_samples(replace(floors, left_out=attacks), 1, 1)
    return found or replace(floors, samples=0, left_out=(*attacks, GRADIENTS))


def _fixed(budget: SanityBudget) -> Callable[..., SanityBudget]:
    def choose(cap: int, available: int, **flags: Any) -> SanityBudget:
        return replace(budget, samples=available)

    return choose


# --sanity-budget: mode -> (what it means, how it chooses the budget).
SANITY_MODES: dict[str, tuple[str, Callable[..., SanityBudget]]] = {
    "auto": (f"at most {CAP_FACTOR}x the suite's cost, the default", fit_budget),
    "full": ("the literature-strength battery", _fixed(FULL_BUDGET)),
    "quick": ("a lighter fixed battery", _fixed(QUICK_BUDGET)),
}


def check_mode(mode: str, option: str = "--sanity-budget") -> str:
    """`mode` if it is a known budget mode; else a ConfigError naming the choices."""
    if mode not in SANITY_MODES:
        shown = "; ".join(f"{name} ({what})" for name, (what, _) in SANITY_MODES.items())
        raise ConfigError(f"{option} {mode!r} is not a sanity budget; choose one of {shown}.")
    return mode


def choose_budget(
    mode: str,
    *,
    suite_passes: int,
    available_samples: int,
    norm: str,
    adaptive: bool = False,
    randomized: bool = False,
    eps: float | None = None,
) -> SanityBudget:
    """The budget of `mode` for a suite costing `suite_passes`, on up to `available_samples`."""
    _, choose = SANITY_MODES[check_mode(mode)]
    flags = {"norm": norm, "adaptive": adaptive, "randomized": randomized, "eps": eps}
    return choose(CAP_FACTOR * suite_passes, available_samples, **flags)


def budget_info(
    budget: SanityBudget,
    mode: str,
    *,
    suite_passes: int,
    norm: str,
    adaptive: bool = False,
    randomized: bool = False,
    eps: float | None = None,
    wall_time_s: float = 0.0,
) -> SanityBudgetInfo:
    """The report's record of a budget: its numbers, estimated costs and left-out checks."""
    cap = CAP_FACTOR * suite_passes if mode == "auto" else None
    left_out = {
        name: (
            f"does not fit the cap of {cap} model passes ({CAP_FACTOR}x the suite's "
            f"{suite_passes}) even at its floor budget; --sanity-budget quick or full runs it"
        )
        for name in budget.left_out
    }
    if norm != "linf":
        left_out[BLACK_BOX] = "SPSA is L-inf only and the battery runs in L2"
    battery = battery_cost(budget, norm, adaptive, randomized=randomized, eps=eps)
    return SanityBudgetInfo(
        mode=mode,  # type: ignore[arg-type]
        samples=budget.samples or 0,
        **{name: getattr(budget, name) for name in _STRENGTHS},
        left_out=left_out,
        battery_passes=battery,
        suite_passes=suite_passes,
        cap_passes=cap,
        wall_time_s=round(wall_time_s, 3),
    )
