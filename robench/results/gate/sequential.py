"""`robench gate --sequential`: the gate's checks decided by sequential paired tests, so the
candidate is evaluated only until the verdict is settled (docs/ci.md, "Sequential gate": the
stopping rule, the per-check alpha and why stopping on the data keeps the guarantees).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from robench._core.errors import ConfigError
from robench.results.gate.checks import Check, PairedTest, Status, display_amount, tolerance_text
from robench.results.gate.policy import Policy
from robench.results.gate.regression import GateResult
from robench.results.report.schema import Report
from robench.results.stats.confidence_sequences import covers
from robench.results.stats.metrics import find_metric, higher_is_better, metric_display
from robench.results.stats.sequential_test import (
    METHOD,
    SequentialVerdict,
    paired_differences,
    sequential_paired_test,
)


@dataclass(frozen=True)
class SequentialCheck:
    """One baseline result x binary metric, with the baseline's values by sample index."""

    result: str
    metric: str
    higher: bool
    allowed: float | None  # the policy's allowed drop; None when it ignores the check
    tolerance_text: str
    baseline: dict[int, Any]  # dataset index -> the baseline's per-sample value

    def paired(
        self, values: dict[str, dict[str, list[Any]]], order: dict[str, list[int]]
    ) -> tuple[list[Any], list[Any]]:
        """The baseline's and the candidate's values on the samples the candidate has so far."""
        base = [self.baseline[i] for i in order.get(self.result, [])]
        return base, values.get(self.result, {}).get(self.metric, [])


class SequentialGate:
    """The stopping rule of `gate --sequential`, and the gate result once it stops."""

    def __init__(self, baseline: Report, policy: Policy) -> None:
        self.baseline = baseline
        self.policy = policy
        self.checks: list[SequentialCheck] = []
        self.notes: list[str] = []
        # The candidate's values and order at the last check: where the run stopped.
        self.last: tuple[dict[str, dict[str, list[Any]]], dict[str, list[int]]] = ({}, {})
        for result in baseline.results:
            samples = baseline.samples.get(result.dataset)
            for metric, value in result.metrics.items():
                registered = find_metric(metric)
                values = registered.values_in(baseline, result.name) if registered else None
                binary = registered is not None and covers(registered)
                if not binary or samples is None or values is None:
                    self.notes.append(
                        f"{result.name}/{metric} is not gated sequentially: the sequential "
                        "gate tests binary per-sample metrics (top1, top5) only."
                    )
                    continue
                tolerance, _ = policy.tolerance_for(result.name, metric)
                allowed = tolerance.allowed_drop(value.value)
                text = tolerance_text(metric_display(metric), tolerance, allowed)
                higher = higher_is_better(metric, value.higher_is_better)
                by_index = dict(zip(samples.indices, values, strict=True))
                found = SequentialCheck(result.name, metric, higher, allowed, text, by_index)
                self.checks.append(found)
        if baseline.aggregates:
            self.notes.append("aggregates are not gated sequentially; run the fixed-n gate.")
        if not any(check.allowed is not None for check in self.checks):
            raise ConfigError(
                "cannot gate sequentially: the baseline has no top1 or top5 check the policy "
                "does not ignore; run the fixed-n gate (without --sequential)."
            )

    @property
    def check_alpha(self) -> float:
        """The level each check is tested at: alpha / m (Bonferroni), alpha under "none"."""
        tested = sum(check.allowed is not None for check in self.checks)
        if self.policy.multiple_testing == "none":
            return self.policy.alpha
        return self.policy.alpha / max(tested, 1)

    def verdicts(
        self, values: dict[str, dict[str, list[Any]]], order: dict[str, list[int]]
    ) -> list[SequentialVerdict | None]:
        """Each check's verdict on the candidate's values so far (None: ignored)."""
        found: list[SequentialVerdict | None] = []
        for check in self.checks:
            if check.allowed is None:
                found.append(None)
                continue
            y = paired_differences(*check.paired(values, order), check.higher)
            found.append(sequential_paired_test(y, min(check.allowed, 0.999), self.check_alpha))
        return found

    def settled(self, values: dict[str, dict[str, list[Any]]], order: dict[str, list[int]]) -> bool:
        """One check regressed, or every check passed."""
        self.last = (values, order)
        verdicts = [v for v in self.verdicts(values, order) if v is not None]
        return any(v.regressed for v in verdicts) or all(v.within_tolerance for v in verdicts)

    def result(self, candidate: Report) -> GateResult:
        """The gate's checks where the candidate's run stopped."""
        values, order = self.last
        verdicts = zip(self.checks, self.verdicts(values, order), strict=True)
        checks = [self._check(check, verdict, values, order) for check, verdict in verdicts]
        notes = list(self.notes)
        info = candidate.sequential
        if info is not None:
            notes.insert(
                0,
                f"sequential gate: stopped after {info.n_stopped} of {info.n_available} "
                f"samples ({'verdict settled' if info.reached else 'samples ran out'}); each "
                f"check tested at alpha {self.check_alpha:.3g} by a {METHOD}.",
            )
        return GateResult(self.baseline, candidate, self.policy, checks, notes)

    def _check(
        self,
        check: SequentialCheck,
        verdict: SequentialVerdict | None,
        values: dict[str, dict[str, list[Any]]],
        order: dict[str, list[int]],
    ) -> Check:
        base, cand = ([float(v) for v in side] for side in check.paired(values, order))
        base_value, cand_value = _mean(base), _mean(cand)
        drop = (base_value - cand_value) * (1 if check.higher else -1)
        display = metric_display(check.metric)
        if verdict is None:
            status, detail, test = Status.passed, "ignored by the policy.", None
        else:
            # The p-value of the verdict reached: "no regression" when it passed.
            p = verdict.p_no_regression if verdict.within_tolerance else verdict.p_regression
            test = PairedTest(f"sequential betting test (n={verdict.n})", p, None)
            status, detail = _classify(verdict, display_amount(display, drop), check)
        return Check(
            perturbation=check.result,
            metric=check.metric,
            higher_is_better=check.higher,
            baseline=base_value,
            candidate=cand_value,
            n=len(base),
            drop=drop,
            allowed=check.allowed,
            test=test,
            status=status,
            detail=detail,
            tolerance_text=check.tolerance_text,
        )


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _classify(verdict: SequentialVerdict, shown: str, check: SequentialCheck) -> tuple[Status, str]:
    on = f"on {verdict.n} paired samples (drop {shown})"
    if verdict.regressed:
        return Status.regressed, (
            f"the drop exceeds {check.tolerance_text} {on}: sequential p = "
            f"{verdict.p_regression:.3g} <= {verdict.alpha:.3g}."
        )
    if verdict.within_tolerance:
        return Status.passed, (
            f"no drop beyond {check.tolerance_text} {on}: sequential p = "
            f"{verdict.p_no_regression:.3g} <= {verdict.alpha:.3g}."
        )
    return Status.inconclusive, (
        f"not settled {on} when the gate stopped (p = {verdict.p_regression:.3g} for a "
        f"regression, {verdict.p_no_regression:.3g} for none, alpha {verdict.alpha:.3g})."
    )
