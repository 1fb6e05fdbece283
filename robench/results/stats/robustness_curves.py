"""Curves read from the per-sample columns attacks record: accuracy against eps from a
minimal-norm result's norms, and accuracy against iterations from first successful iterates.

Conventions (robust at eps when `min_norm > eps`, robust after t steps when `first_success`
is None or > t, Wilson 95% intervals): docs/formats.md, "Minimal-norm attacks" and "Attack
columns". The libraries' loops (PGD) do not evaluate their last iterate; the runner's re-run
does, so at the last step a sample the result scores wrong counts as fooled too, and the
curve (the best iterate so far) can end below the result's top-1. Torch-free.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from robench._core.errors import ConfigError
from robench.results.report.schema import PerturbationResult, Report
from robench.results.stats.metrics import wilson_interval

NORM_COLUMN = "min_norm"
ITERATION_COLUMN = "first_success"
CORRECT_COLUMN = "top1"  # the re-run's per-sample correctness
CURVE_POINTS = 201  # points of an eps curve between 0 and the cap
STILL_FALLING_SHARE = 0.2  # the convergence check looks at the last 20% of the iterations
REPORT_FIX = "pass the report as `robench eval` wrote it, or evaluate again"  # bad columns


@dataclass(frozen=True)
class Curve:
    """Accuracy (fractions) at each x, with Wilson 95% intervals, over `n` samples."""

    result: str  # the result's name
    x: list[float]  # eps (pixel units) or iterations
    value: list[float]
    low: list[float]
    high: list[float]
    n: int


def accuracy_at(norms: Sequence[float], eps: float) -> tuple[float, tuple[float, float]]:
    """Accuracy at `eps` from minimal norms (robust: norm > eps) and its Wilson interval."""
    robust = sum(1 for n in norms if n > eps)
    total = len(norms)
    return (robust / total if total else 0.0), wilson_interval(robust, total)


def _curve(result: str, x: Sequence[float], robust: Sequence[int], n: int) -> Curve:
    intervals = [wilson_interval(r, n) for r in robust]
    return Curve(
        result=result,
        x=list(x),
        value=[r / n if n else 0.0 for r in robust],
        low=[lo for lo, _ in intervals],
        high=[hi for _, hi in intervals],
        n=n,
    )


def is_minimal_norm(result: PerturbationResult) -> bool:
    """A result with per-sample minimal norms: the `minimal-norm` kind (capped at its eps),
    or an attack with no budget that searches for the smallest perturbation
    (`torchattacks.CW`, `torchattacks.DeepFool`: params `threat_model = "minimal-norm"`)."""
    return result.kind == "minimal-norm" or result.params.get("threat_model") == "minimal-norm"


def is_uncapped(result: PerturbationResult) -> bool:
    """A minimal-norm result without a cap: its output was scored whatever its norm, so its
    norms give the accuracy at every eps."""
    return result.kind != "minimal-norm" and "eps" not in result.params


def _is_norm(value: object) -> bool:
    """A stored minimal norm: a number >= 0, or None (no adversarial found)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return value is None or (number and value >= 0)  # type: ignore[operator]


def result_norms(
    report: Report, result: PerturbationResult, where: str = "the report"
) -> list[float] | None:
    """A minimal-norm result's per-sample norms, None when the report has none; a column of
    another length than the result's samples, or holding other than norms, is refused
    (`where` names the report in the sentence), not read as if it were whole."""
    norms = report.sample_values(result.name, NORM_COLUMN)
    if norms is None:
        return None
    if len(norms) != result.n_samples:
        raise ConfigError(
            f"{where}'s minimal-norm result {result.name!r} has {len(norms)} per-sample "
            f"{NORM_COLUMN} values for its {result.n_samples} samples; {REPORT_FIX}."
        )
    bad = next((value for value in norms if not _is_norm(value)), None)
    if bad is not None:
        raise ConfigError(
            f"{where}'s minimal-norm result {result.name!r} holds {bad!r} in its {NORM_COLUMN} "
            f"column, where norms are numbers >= 0 (null: no adversarial found); {REPORT_FIX}."
        )
    return [math.inf if n is None else float(n) for n in norms]  # None: robust at every eps


def result_cap(result: PerturbationResult, where: str = "the report") -> float:
    """A minimal-norm result's cap, `params.eps` (infinity for an uncapped one); refused when
    missing or not a number."""
    if is_uncapped(result):
        return math.inf
    cap = result.params.get("eps")
    if not isinstance(cap, int | float) or isinstance(cap, bool) or not cap > 0:
        raise ConfigError(
            f"{where}'s minimal-norm result {result.name!r} has params.eps {cap!r}, not its "
            f"cap (a number > 0); {REPORT_FIX}."
        )
    return float(cap)


def eps_curve(
    report: Report,
    result: PerturbationResult,
    points: int = CURVE_POINTS,
    where: str = "the report",
) -> Curve:
    """Accuracy against eps from 0 to the result's cap (for an uncapped result: to its
    largest finite norm, past which nothing changes), from its per-sample norms."""
    norms = result_norms(report, result, where) or []
    cap = result_cap(result, where)
    if math.isinf(cap):
        cap = max((n for n in norms if math.isfinite(n)), default=0.0) or 1.0
    return step_curve(result.name, norms, cap, points)


def step_curve(name: str, norms: Sequence[float], cap: float, points: int = CURVE_POINTS) -> Curve:
    """Accuracy against x from 0 to `cap` when a sample counts at x while its value is > x
    (a minimal norm, a certified radius); every distinct value below the cap is a point, so
    the steps are drawn where they are."""
    grid = {cap * i / (points - 1) for i in range(points)}
    grid |= {n for n in norms if 0 <= n <= cap}
    x = sorted(grid)
    ordered = sorted(norms)
    robust, k = [], 0
    for eps in x:  # both sorted: count norms <= eps as the grid grows
        while k < len(ordered) and ordered[k] <= eps:
            k += 1
        robust.append(len(ordered) - k)
    return _curve(name, x, robust, len(norms))


def iteration_curve(report: Report, result: PerturbationResult) -> Curve | None:
    """Accuracy against iterations 0..steps from `first_success` (and, at the last step,
    the re-run's correctness); None when the result recorded no iterations."""
    first = report.sample_values(result.name, ITERATION_COLUMN)
    steps = result.params.get("steps")
    if first is None or not isinstance(steps, int):
        return None
    correct = report.sample_values(result.name, CORRECT_COLUMN) or [True] * len(first)
    fooled_at = [
        k if k is not None else (steps if not ok else None)
        for k, ok in zip(first, correct, strict=True)
    ]
    counts = [0] * (steps + 1)
    for k in fooled_at:
        if k is not None:
            counts[min(k, steps)] += 1
    robust = [len(first) - fooled for fooled in itertools.accumulate(counts)]
    return _curve(result.name, list(range(steps + 1)), robust, len(first))


def accuracy_at_results(
    report: Report, eps_values: Sequence[float], where: str = "the report"
) -> list[PerturbationResult]:
    """One result per minimal-norm result of `report` and eps at most its cap: `NAME@EPS`,
    top-1 at that eps read from the per-sample norms (what `robench compare --at-eps`
    shows as columns)."""
    from robench._core.units import display_pixel_value
    from robench.results.report.schema import MetricValue

    found = []
    for result in filter(is_minimal_norm, report.results):
        norms = result_norms(report, result, where)
        cap = result_cap(result, where)
        for eps in eps_values:
            if norms is None or eps > cap:
                continue
            value, ci95 = accuracy_at(norms, eps)
            metric = MetricValue(value=value, ci95=ci95, higher_is_better=True)
            update = {
                "name": f"{result.name}@{display_pixel_value(eps)}",
                "params": {**result.params, "eps": eps, "cap": cap if math.isfinite(cap) else None},
                "metrics": {CORRECT_COLUMN: metric},
                "wall_time_s": 0.0,
            }
            found.append(result.model_copy(update=update))
    return found
