"""A sanity battery against gradient masking and other ways a robustness number can lie.

Checks from the robustness-evaluation literature (Carlini et al. 2019, "On Evaluating
Adversarial Robustness"; Athalye et al. 2018; Croce & Hein 2020), each reported as pass or
warn with its numbers, in one threat model (`norm`, a row of `NORMS`: "linf" or "l2"). The
checks, what each runs and its budget (`robench.evaluation.sanity.budget`): docs/sanity.md.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch.utils.data import Dataset

from robench._core.batching import batch_indices
from robench._core.model_hooks import supports_adaptive_attack
from robench._core.progress import NoProgress, Progress
from robench._core.seeding import derive_seed
from robench.evaluation.runner import perturb_and_score
from robench.evaluation.sanity.budget import (
    ADAPTIVE,
    BLACK_BOX,
    EOT,
    EPS0,
    EPS_SWEEP,
    FULL_BUDGET,
    GRADIENTS,
    ONE_STEP,
    QUICK_BUDGET,
    SWEEP,
    UNBOUNDED,
    AttackRun,
    SanityBudget,
    battery_runs,
)
from robench.evaluation.suites import PlannedPerturbation
from robench.models.checks import EOT_SUITE
from robench.perturbations import PERTURBATIONS
from robench.perturbations.threat_models import NORMS, ThreatModel
from robench.results.report.checks import TOLERANCE  # one accuracy slack for every comparison
from robench.results.report.schema import SanityResult
from robench.results.stats.metrics import METRICS
from robench.tasks import load_task
from robench.tasks.base import Task, records_of

logger = logging.getLogger(__name__)

__all__ = ["QUICK_BUDGET", "SanityBudget", "run_sanity"]

UNBOUNDED_MAX_ACCURACY = 0.05


@dataclass
class _Battery:
    model: torch.nn.Module
    dataset: Dataset
    indices: Sequence[int]
    eps: float
    seed: int
    batch_size: int
    device: torch.device
    task: Task
    norm: str  # threat model of every attack: a key of NORMS
    pgd_steps: int
    progress: Progress
    runs: dict[str, tuple[AttackRun, ...]] = field(default_factory=dict)

    @property
    def threat(self) -> ThreatModel:
        return NORMS[self.norm]

    def show(self, eps: float) -> str:
        """A budget as the threat model writes it: "8/255" (L-inf), "0.5" (L2)."""
        return self.threat.display(eps)

    def measure(self, check: str) -> list[float]:
        """Top-1 accuracies of the check's attack runs, in order, under one progress bar."""
        runs = self.runs[check]
        name = f"sanity {check}" + (f" ({len(runs)} runs)" if len(runs) > 1 else "")
        self.progress.start(name, len(self.indices) * len(runs), 0)
        try:
            return [self._accuracy(run) for run in runs]
        finally:
            self.progress.finish()

    def _accuracy(self, run: AttackRun) -> float:
        """Top-1 accuracy of one run on the battery's samples (checked and re-run as usual)."""
        validated = PERTURBATIONS.get(run.kind).Params.model_validate(run.params)
        planned = PlannedPerturbation(run.label, run.kind, validated, None, run.adaptive)
        batches = batch_indices(list(self.indices), self.batch_size)
        top1 = METRICS.get("top1").per_sample
        correct = 0
        loaded = self.task.batches(self.dataset, batches, self.device)
        for number, (inputs, targets) in enumerate(loaded):
            seed = derive_seed(self.seed, "sanity", run.label, number)
            columns = perturb_and_score(self.model, self.task, planned, inputs, targets, seed)
            correct += sum(bool(top1(record)) for record in records_of(columns))
            self.progress.advance(len(inputs))
        return correct / len(self.indices)

    def attack_name(self, steps: int) -> str:
        """PGD with its steps, and its norm when not L-inf: "PGD-20", "PGD-L2-20"."""
        norm = "" if self.norm == "linf" else f"-{self.threat.name}"
        return f"PGD{norm}-{steps}"

    @property
    def pgd_name(self) -> str:
        return self.attack_name(self.pgd_steps)

    def cube_radius(self) -> float:
        """The smallest eps whose ball holds the whole [0, 1] image cube around any image:
        1 for L-inf, the cube's diagonal sqrt(C * H * W) for L2."""
        if self.norm == "linf":
            return 1.0
        inputs, _ = self.task.load_batch(self.dataset, list(self.indices)[:1], self.device)
        return math.sqrt(inputs[0].numel())


def _result(
    name: str, ok: bool, detail: str, if_warn: str = "", /, **values: float
) -> SanityResult:
    """A pass/warn verdict; `if_warn` is appended to the detail when the check warns."""
    return SanityResult.verdict(name, ok, detail, if_warn, values)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _eps_zero(clean: float, zero: float) -> SanityResult:
    return _result(
        EPS0,
        abs(zero - clean) < 1e-9,
        f"PGD at eps 0 gives {_pct(zero)}, clean {_pct(clean)}",
        clean=clean,
        eps0=zero,
    )


def _monotone(b: _Battery, clean: float, sweep: list[float]) -> SanityResult:
    accs = [clean, *sweep]
    rises = [later - earlier for earlier, later in itertools.pairwise(accs)]
    shown = ", ".join(
        f"{b.show(f * b.eps)}: {_pct(a)}" for f, a in zip(EPS_SWEEP, sweep, strict=True)
    )
    values = {f"eps_x{f}": a for f, a in zip(EPS_SWEEP, sweep, strict=True)}
    return _result(
        SWEEP,
        max(rises) <= TOLERANCE,
        f"{b.pgd_name} accuracy by eps: {shown}",
        **values,
    )


def _pgd_vs_one_step(b: _Battery, pgd: float) -> SanityResult:
    kind, name = ONE_STEP[b.norm]
    (one_step,) = b.measure(name)
    return _result(
        name,
        pgd <= one_step + TOLERANCE,
        f"{b.pgd_name} {_pct(pgd)} vs {kind.upper()} {_pct(one_step)} at eps {b.show(b.eps)}",
        **{"pgd": pgd, kind: one_step},
    )


def _unbounded(b: _Battery, _pgd: float) -> SanityResult:
    (run,) = b.runs[UNBOUNDED]
    (acc,) = b.measure(UNBOUNDED)
    steps, eps = run.params["steps"], run.params["eps"]
    return _result(
        UNBOUNDED,
        acc <= UNBOUNDED_MAX_ACCURACY,
        f"{b.attack_name(steps)} with eps {b.show(eps)} (the whole image range) leaves {_pct(acc)} "
        "accuracy",
        "gradients do not lead anywhere (masking?)",
        accuracy=acc,
    )


def _black_box(b: _Battery, pgd: float) -> SanityResult:
    (spsa,) = b.measure(BLACK_BOX)
    return _result(
        BLACK_BOX,
        spsa >= pgd - TOLERANCE,
        f"SPSA {_pct(spsa)} vs {b.pgd_name} {_pct(pgd)}",
        "a black-box attack beats the white-box one, a sign of gradient masking",
        spsa=spsa,
        pgd=pgd,
    )


def _eot(b: _Battery, pgd: float) -> SanityResult:
    (rand,) = b.measure(EOT)
    return _result(
        EOT,
        False,
        f"randomized model: AutoAttack rand (EOT) gives {_pct(rand)} vs {b.pgd_name} "
        f"{_pct(pgd)} at eps {b.show(b.eps)}; quote the EOT number, and run the suite "
        f"`{EOT_SUITE}` (robench eval MODEL -s {EOT_SUITE}: PGD and APGD with EOT)",
        eot=rand,
        pgd=pgd,
    )


def _adaptive(b: _Battery, pgd: float) -> SanityResult:
    (adaptive,) = b.measure(ADAPTIVE)
    return _result(
        ADAPTIVE,
        adaptive >= pgd - TOLERANCE,
        f"{b.pgd_name} with gradients through M {_pct(adaptive)} vs without {_pct(pgd)}",
        "stopping gradients through M overstates robustness; report the adaptive number",
        without_m_gradients=pgd,
        with_m_gradients=adaptive,
    )


def _attack_checks(b: _Battery, step: Callable[[str], None], results: list[SanityResult]) -> float:
    """The checks that compare attacks, appended to `results`; returns the accuracy under
    PGD at eps (the sweep's 1 x eps run), which later checks compare with."""
    step(EPS0)
    clean, zero = b.measure(EPS0)
    results.append(_eps_zero(clean, zero))
    step(SWEEP)
    sweep = b.measure(SWEEP)
    results.append(_monotone(b, clean, sweep))
    pgd = sweep[EPS_SWEEP.index(1.0)]
    later = {ONE_STEP[b.norm][1]: _pgd_vs_one_step, UNBOUNDED: _unbounded, BLACK_BOX: _black_box}
    for name, check in later.items():
        if name in b.runs:
            step(name)
            results.append(check(b, pgd))
    return pgd


def _randomness_checks(
    b: _Battery,
    step: Callable[[str], None],
    results: list[SanityResult],
    pgd: float | None,
) -> None:
    """The gradients check, then, for a model it finds randomized, EOT-PGD (when the budget
    planned it) or a pointer to the EOT suite."""
    step(GRADIENTS)
    results.append(_gradients_and_randomness(b))
    if pgd is None or not results[-1].values.get("randomized"):
        return
    if EOT in b.runs:
        step(EOT)
        results.append(_eot(b, pgd))
        return
    logger.warning(
        "sanity battery: the model is randomized, but the budget was set for a deterministic "
        "one; rerun with --sanity-budget full for the EOT check, and run the suite `%s` "
        "(robench eval MODEL -s %s: PGD and APGD with EOT)",
        EOT_SUITE,
        EOT_SUITE,
    )


def run_sanity(
    model: torch.nn.Module,
    dataset: Dataset,
    indices: Sequence[int],
    *,
    eps: float,
    seed: int,
    batch_size: int,
    device: torch.device,
    budget: SanityBudget | None = None,
    on_step: Callable[[str], None] | None = None,
    task: Task | None = None,
    norm: str = "linf",
    progress: Progress | None = None,
    randomized: bool | None = None,
) -> list[SanityResult]:
    """Run the battery on the first `budget.samples` of `indices` (all of them when None) at
    budget `eps` of the threat model `norm` ("linf" or "l2", pixel units on the [0, 1] scale),
    with one `progress` bar per check.

    `randomized` says whether the budget planned the EOT run of a randomized model: None runs
    it whenever the gradients check finds the model randomized; False never runs it (the
    budget had no room for it; a model found randomized then says so in the log). The battery
    is about image classifiers under adversarial attacks (top-1 accuracy).
    """
    if norm not in ONE_STEP:  # the battery's PGD and one-step attacks: L-inf and L2 only
        raise ValueError(f"unknown norm {norm!r}; choose one of {', '.join(ONE_STEP)}")
    task = task or load_task("image-classification")
    budget = budget or FULL_BUDGET
    chosen = list(indices) if budget.samples is None else list(indices)[: budget.samples]
    steps, shown = budget.pgd_steps, progress or NoProgress()
    b = _Battery(model, dataset, chosen, eps, seed, batch_size, device, task, norm, steps, shown)
    if chosen:
        b.runs = battery_runs(
            budget,
            eps=eps,
            norm=norm,
            radius=b.cube_radius(),
            adaptive=supports_adaptive_attack(model),
            randomized=randomized is not False,
        )
    if norm != "linf":  # left out, not passed: there is no L2 SPSA to compare with
        logger.info(
            "sanity battery: black-box check (SPSA) left out: SPSA is L-inf only and the "
            "battery runs in %s",
            b.threat.name,
        )
    for name in budget.left_out:
        logger.warning("sanity battery: %s left out: it does not fit the budget", name)
    step = on_step or (lambda name: None)
    results: list[SanityResult] = []
    pgd = _attack_checks(b, step, results) if SWEEP in b.runs else None
    if GRADIENTS in b.runs:
        _randomness_checks(b, step, results, pgd)
    if pgd is not None and ADAPTIVE in b.runs:  # e.g. Elliptical Attention: gradients through M
        step(ADAPTIVE)
        results.append(_adaptive(b, pgd))
    return results


def _gradients_and_randomness(b: _Battery) -> SanityResult:
    chosen = list(b.indices)[: b.batch_size]
    b.progress.start(f"sanity {GRADIENTS}", len(chosen), 0)
    try:
        inputs, targets = b.task.load_batch(b.dataset, chosen, b.device)
        found = b.task.check_model(b.model, inputs, targets, gradients=True)
        b.progress.advance(len(chosen))
    finally:
        b.progress.finish()
    share = found.bad_gradient_share
    detail = f"{_pct(share)} of samples have zero or non-finite input gradients" + (
        "; the model is randomized (two forward passes differ): attack it with expectation "
        f"over transformation, robench eval MODEL -s {EOT_SUITE}"
        if found.randomized
        else ""
    )
    return _result(
        GRADIENTS,
        share == 0 and not found.randomized,
        detail,
        bad_gradient_share=share,
        randomized=float(found.randomized),
    )
