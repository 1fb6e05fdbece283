"""Gate checks of aggregates (mCE, mean corruption accuracy), paired over samples: each
bootstrap replicate draws positions once per dataset for every member result of both reports
(docs/ci.md, "What each verdict means", Aggregates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from robench.results.gate.checks import Check, PairedTest, check_policy_units, judged
from robench.results.gate.policy import Policy
from robench.results.report.schema import AggregateResult, PerturbationResult, Report
from robench.results.stats.aggregate_samples import (
    Block,
    SampleStatistic,
    bootstrap_accuracies,
    paired_block,
    point_accuracies,
    shared_block,
)
from robench.results.stats.aggregates import Aggregate, Plan, corruption_groups, find_aggregate
from robench.results.stats.bootstrap import paired_summary
from robench.results.stats.paired_tests import mean_samples_needed

# numpy is imported where it is used: `robench compare` (and a gate of binary metrics) reads
# reports without it.
if TYPE_CHECKING:
    import numpy as np

_PREFIX = ("base:", "cand:")


@dataclass(frozen=True)
class PairedAggregate:
    """An aggregate of two reports on their shared samples, and the bootstrap of its change."""

    baseline: float
    candidate: float
    difference: float  # candidate - baseline, stored units
    ci95: tuple[float, float]  # 95% interval of the difference (`bootstrap`)
    p_worse: float  # one-sided bootstrap p-value of "candidate worse"
    sd_per_sample: float  # bootstrap sd of the difference x sqrt(n)
    n: int  # paired samples (of the aggregate's dataset)


def _plan(report: Report, aggregate: Aggregate, stored: AggregateResult) -> Plan:
    return aggregate.plan(report, stored.dataset, corruption_groups(report).get(stored.dataset, []))


def _rows(plan: Plan) -> list[PerturbationResult]:
    return plan.members + ([plan.clean] if plan.clean is not None else [])


def _blocks(
    baseline: Report, candidate: Report, plans: tuple[Plan, Plan], statistic: SampleStatistic
) -> list[Block] | None:
    """Paired blocks, one per dataset the plans read; None without per-sample values (or
    with counts of different class numbers)."""
    blocks = []
    rows = [_rows(plan) for plan in plans]
    for dataset in dict.fromkeys(r.dataset for r in rows[0]):
        found = [
            shared_block(report, dataset, [r for r in plan_rows if r.dataset == dataset], statistic)
            for report, plan_rows in zip((baseline, candidate), rows, strict=True)
        ]
        if found[0] is None or found[1] is None:
            return None
        if found[0][0].values.shape[2] != found[1][0].values.shape[2]:
            return None
        blocks.append(paired_block(found[0][0], found[1][0], _PREFIX))
    return blocks


def paired_aggregate(
    baseline: Report,
    candidate: Report,
    stored: AggregateResult,
    *,
    n_boot: int = 1_000,
    seed: int = 0,
) -> PairedAggregate | str:
    """Aggregate `stored` (of the baseline) in both reports, paired over their shared samples;
    or the sentence saying why it cannot be paired."""
    import numpy as np

    aggregate = find_aggregate(stored.kind)
    if aggregate is None:
        return f"aggregate kind {stored.kind!r} is unknown to this robench."
    plans = (_plan(baseline, aggregate, stored), _plan(candidate, aggregate, stored))
    names = [[r.name for r in _rows(plan)] for plan in plans]
    if any(plan.reason for plan in plans) or names[0] != names[1]:
        return "it cannot be recomputed on the same member results in both reports."
    blocks = _blocks(baseline, candidate, plans, aggregate.statistic)
    if blocks is None or any(block.indices.size == 0 for block in blocks):
        return f"the reports share no per-sample {aggregate.statistic.label} values of its members."
    value_b, value_c = plans[0].value, plans[1].value
    if value_b is None or value_c is None:
        return "it cannot be recomputed from the reports."
    point, boot = point_accuracies(blocks), bootstrap_accuracies(blocks, n_boot, seed)

    def split(found: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
        return {k[len(prefix) :]: v for k, v in found.items() if k.startswith(prefix)}

    base, cand = float(value_b(split(point, _PREFIX[0]))), float(value_c(split(point, _PREFIX[1])))
    diffs = value_c(split(boot, _PREFIX[1])) - value_b(split(boot, _PREFIX[0]))
    # one-sided "candidate worse": a rise of a lower-is-better aggregate, a fall otherwise
    worse = "less" if aggregate.higher_is_better else "greater"
    n = int(blocks[0].indices.size)
    diff, ci95, p_worse, sd = paired_summary(cand - base, np.asarray(diffs), n, worse)
    return PairedAggregate(base, cand, diff, ci95, p_worse, sd, n)


def _skip(stored: AggregateResult, other: AggregateResult | None) -> str | None:
    """Why the baseline's aggregate is not gated against the candidate's; None to gate it."""
    if other is None:
        return "the candidate report lacks it"
    for report, found in (("baseline", stored), ("candidate", other)):
        if found.value is None:
            return f"it has no value in the {report} ({found.reason})"
    if (other.kind, other.dataset, other.members) != (stored.kind, stored.dataset, stored.members):
        return "the reports compute it on different datasets or member results"
    return None


def _check(
    baseline: Report, candidate: Report, stored: AggregateResult, policy: Policy
) -> Check | str:
    aggregate = find_aggregate(stored.kind)
    if aggregate is None:
        return f"aggregate kind {stored.kind!r} is unknown to this robench"
    tolerance = policy.tolerance_for(stored.name, stored.kind)[0]
    check_policy_units(stored.kind, aggregate.display, tolerance)
    paired = paired_aggregate(
        baseline, candidate, stored, n_boot=policy.aggregate_resamples, seed=policy.seed
    )
    if isinstance(paired, str):
        return paired.rstrip(".")
    drop = (-1.0 if aggregate.higher_is_better else 1.0) * paired.difference
    test = PairedTest(
        f"paired bootstrap over samples ({policy.aggregate_resamples} resamples)",
        paired.p_worse,
        mean_samples_needed(drop, paired.sd_per_sample, policy.alpha, policy.power),
    )
    check = Check(
        perturbation=stored.name,
        metric=stored.kind,
        higher_is_better=aggregate.higher_is_better,
        baseline=paired.baseline,
        candidate=paired.candidate,
        n=paired.n,
        drop=drop,
        test=test,
        aggregate=True,
        display=aggregate.display,
    )
    return judged(check, policy, tolerance)


def aggregate_checks(
    baseline: Report, candidate: Report, policy: Policy
) -> tuple[list[Check], list[str], set[int | None]]:
    """A check per aggregate both reports can pair; notes on the others; the rules used."""
    checks, notes, used = [], [], set()
    for stored in baseline.aggregates:
        why = _skip(stored, candidate.aggregate(stored.name))
        rule = policy.tolerance_for(stored.name, stored.kind)[1]
        found = why if why is not None else _check(baseline, candidate, stored, policy)
        if isinstance(found, str):
            notes.append(f"aggregate {stored.name} not gated: {found}.")
            continue
        used.add(rule)
        checks.append(found)
    names = {a.name for a in baseline.aggregates}
    extra = [a.name for a in candidate.aggregates if a.name not in names]
    if extra:
        notes.append(f"aggregates not gated, the baseline lacks them: {', '.join(extra)}.")
    return checks, notes, used
