"""Gates: did a candidate's robustness regress against a baseline, beyond tolerance?

Every perturbation x metric of the baseline is one paired check (exact McNemar for per-sample
accuracies, a paired bootstrap for real values); aggregates are checked by `aggregates.py`.
Verdicts and statistics: docs/ci.md, "What each verdict means".
"""

from __future__ import annotations

import json
import logging
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from robench._core.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, ConfigError
from robench.results.gate.aggregates import aggregate_checks
from robench.results.gate.checks import (
    Check,
    PairedTest,
    Status,
    check_policy_units,
    decide_family,
    judged,
)
from robench.results.gate.policy import Policy, Tolerance
from robench.results.report.schema import (
    PerturbationResult,
    Report,
    device_type_note,
    precision_note,
)
from robench.results.stats.metrics import find_metric, higher_is_better, metric_display
from robench.results.stats.paired_statistic import PairedStatistic
from robench.results.stats.paired_tests import (
    discordant_pairs,
    mcnemar_exact,
    mcnemar_samples_needed,
    mean_samples_needed,
    paired_bootstrap,
)

# numpy is imported where it is used: `robench compare` (and a gate of binary metrics) reads
# reports without it.
logger = logging.getLogger(__name__)

# A result's per-sample values of one metric (`Metric.values_in`): as stored, or an array.
Values = Any


def _mcnemar(base: Values, cand: Values, higher: bool, policy: Policy) -> PairedTest:
    # b: pairs where only the baseline is good (right, for a higher-is-better indicator).
    b, c = discordant_pairs(base, cand) if higher else discordant_pairs(cand, base)
    return PairedTest(
        f"exact McNemar (b={b}, c={c})",
        mcnemar_exact(b, c, "greater"),
        mcnemar_samples_needed(b, c, len(base), policy.alpha, policy.power),
    )


def _bootstrap(
    base: Values,
    cand: Values,
    higher: bool,
    policy: Policy,
    statistic: PairedStatistic | None = None,
) -> PairedTest:
    """A paired bootstrap of the mean difference, or of the metric's own `statistic` (a ratio
    of sums over samples)."""
    import numpy as np

    worse: Literal["less", "greater"] = "less" if higher else "greater"
    n = policy.n_resamples
    if statistic is not None:
        diff, _, p_value, sd = statistic.paired(base, cand, n, policy.seed, worse)
        name = f"paired bootstrap over {statistic.unit} ({n} resamples)"
    else:
        base, cand = np.asarray(base, dtype=float), np.asarray(cand, dtype=float)
        result = paired_bootstrap(base, cand, n, policy.seed, alternative=worse)
        diff, p_value, name = result.mean_diff, result.p_value, f"paired bootstrap ({n} resamples)"
        sd = float(np.std(cand - base, ddof=1)) if base.size > 1 else 0.0
    return PairedTest(name, p_value, mean_samples_needed(diff, sd, policy.alpha, policy.power))


def _finite_numbers(value: Any) -> bool:
    """A finite number, or a list of them (a ratio's terms, ECE's [confidence, correct])."""
    if isinstance(value, numbers.Real):  # numpy's scalars too
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(_finite_numbers(v) for v in value)
    return False


def _check_numbers(values: Any, which: str, perturbation: str, metric: str) -> None:
    """Refuse per-sample values that are not finite numbers (a hand-edited or corrupted
    report) with the sample, not a numpy traceback."""
    listed = values.tolist() if hasattr(values, "tolist") else values  # a numpy array
    for position, value in enumerate(listed):
        if not _finite_numbers(value):
            raise ConfigError(
                f"cannot gate: the {which} report's {perturbation}/{metric} value of sample "
                f"{position} is {value!r:.40}, not a finite number; regenerate that report "
                "with `robench eval` (per-sample values are numbers robench wrote)."
            )


_TESTS: dict[str, Callable[[Values, Values, bool, Policy], PairedTest]] = {
    "binary": _mcnemar,
    "real": _bootstrap,
}


# --- checks ---------------------------------------------------------------------------


@dataclass
class GateResult:
    """Every check of a gate, plus notes on what was not gated or looks off."""

    baseline: Report
    candidate: Report
    policy: Policy
    checks: list[Check]
    notes: list[str] = field(default_factory=list)

    @property
    def status(self) -> Status:
        return max((c.status for c in self.checks), key=list(Status).index, default=Status.passed)

    def count(self, status: Status) -> int:
        return sum(c.status is status for c in self.checks)


# Status -> exit code without and with --strict.
_EXIT_CODES = {
    Status.passed: (EXIT_OK, EXIT_OK),
    Status.inconclusive: (EXIT_OK, EXIT_INCONCLUSIVE),
    Status.regressed: (EXIT_REGRESSION, EXIT_REGRESSION),
}


def exit_code(status: Status, strict: bool) -> int:
    """0 pass, 1 regression, 4 inconclusive under --strict (else 0)."""
    return _EXIT_CODES[status][strict]


def _short(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 24 else text[:21] + "..."


_SAME: list[tuple[str, Callable[[Report], object], str]] = [
    ("task", lambda r: r.task, "evaluate both on the same task"),
    ("suite", lambda r: r.suite.name, "evaluate both with the same suite"),
    ("suite version", lambda r: r.suite.version, "evaluate both with the same suite version"),
    ("datasets", lambda r: list(r.datasets), "evaluate both with the same named datasets"),
]

# Per dataset: what must match for its samples to pair.
_SAME_DATA: list[tuple[str, Callable[[Report, str], object], str]] = [
    ("data kind", lambda r, d: r.datasets[d].kind, "evaluate both on the same data"),
    ("data split", lambda r, d: r.datasets[d].split, "evaluate both on the same split"),
    ("dataset size", lambda r, d: r.datasets[d].n_total, "evaluate both on the same data"),
    ("number of classes", lambda r, d: r.datasets[d].classes, "evaluate both on the same data"),
    (
        "sample set (indices_sha256)",
        lambda r, d: r.datasets[d].indices_sha256,
        "evaluate both with the same --limit and --seed",
    ),
    (
        "sample indices",
        lambda r, d: r.samples[d].indices if d in r.samples else None,
        "evaluate both on the same samples",
    ),
    (
        "sample targets",
        lambda r, d: r.samples[d].targets if d in r.samples else None,
        "evaluate both on the same data and class map",
    ),
]


def _refuse(what: str, base: object, cand: object, fix: str) -> ConfigError:
    return ConfigError(
        f"cannot gate: baseline and candidate differ in {what} "
        f"({_short(base)} vs {_short(cand)}); {fix}."
    )


def check_pairable(baseline: Report, candidate: Report) -> list[str]:
    """Refuse (ConfigError) reports that cannot be paired; return notes on softer differences."""
    for what, get, fix in _SAME:
        if get(baseline) != get(candidate):
            raise _refuse(what, get(baseline), get(candidate), fix)
    for name in baseline.datasets:
        for what, get_in, fix in _SAME_DATA:
            base, cand = get_in(baseline, name), get_in(candidate, name)
            if base != cand:
                where = f" of dataset {name!r}" if len(baseline.datasets) > 1 else ""
                raise _refuse(what + where, base, cand, fix)
    notes = []
    if baseline.suite.sha256 != candidate.suite.sha256:
        notes.append(
            f"the suite file changed (sha256 {baseline.suite.sha256[:12]} vs "
            f"{candidate.suite.sha256[:12]}) without a version bump; check its perturbations."
        )
    for name, data in baseline.datasets.items():
        other = candidate.datasets[name].path
        if data.path != other:
            notes.append(f"data paths of {name!r} differ ({data.path} vs {other}).")
    pair, names = [baseline, candidate], ["baseline", "candidate"]
    notes += [n for n in (precision_note(pair, names), device_type_note(pair, names)) if n]
    baseline_names = {r.name for r in baseline.results}
    extra = [r.name for r in candidate.results if r.name not in baseline_names]
    if extra:
        notes.append(f"not gated, the baseline lacks them: {', '.join(extra)}.")
    notes += [f"candidate report warns: {w}" for w in candidate.warnings]
    return notes


def _paired_results(
    baseline: Report, candidate: Report
) -> list[tuple[PerturbationResult, PerturbationResult]]:
    found = {r.name: r for r in candidate.results}
    pairs = []
    for base in baseline.results:
        cand = found.get(base.name)
        if cand is None:
            raise ConfigError(
                f"cannot gate: the candidate report lacks perturbation {base.name!r} of the "
                "baseline; evaluate the candidate with the full suite."
            )
        if cand.n_samples != base.n_samples:
            raise ConfigError(
                f"cannot gate: {base.name} ran on {base.n_samples} samples in the baseline but "
                f"{cand.n_samples} in the candidate; evaluate both with the same suite and limit."
            )
        pairs.append((base, cand))
    return pairs


def _check(
    baseline: Report,
    candidate: Report,
    pair: tuple[PerturbationResult, PerturbationResult],
    metric: str,
    tolerance: Tolerance,
    policy: Policy,
) -> Check:
    base, cand = pair
    base_value, cand_value = base.metrics[metric], cand.metrics.get(metric)
    if cand_value is None or cand_value.higher_is_better != base_value.higher_is_better:
        raise ConfigError(
            f"cannot gate: {base.name}/{metric} is missing from the candidate or has the "
            "opposite direction; evaluate both with the same suite."
        )
    check_policy_units(metric, metric_display(metric), tolerance)
    higher = higher_is_better(metric, base_value.higher_is_better)
    check = Check(
        perturbation=base.name,
        metric=metric,
        higher_is_better=higher,
        baseline=base_value.value,
        candidate=cand_value.value,
        n=base.n_samples,
        drop=(base_value.value - cand_value.value) * (1 if higher else -1),
        test=_paired_test(baseline, candidate, base.name, metric, higher, policy),
    )
    return judged(check, policy, tolerance)


def _metrics_the_candidate_lacks(baseline: Report, candidate: Report) -> list[str]:
    """The baseline's metrics no result of the candidate reports (one from before they
    existed): skipped with a note; one missing from only some results refuses the gate."""
    found = {name for result in candidate.results for name in result.metrics}
    wanted = dict.fromkeys(name for result in baseline.results for name in result.metrics)
    return [name for name in wanted if name not in found]


def run_gate(baseline: Report, candidate: Report, policy: Policy | None = None) -> GateResult:
    """Check every perturbation, metric and aggregate of the baseline against the candidate."""
    policy = policy or Policy()
    notes = check_pairable(baseline, candidate)
    used_rules: set[int | None] = set()  # None: a check no rule matched
    checks = []
    unknown = _metrics_the_candidate_lacks(baseline, candidate)
    if unknown:
        notes.append(
            f"not gated, the candidate report has none of these metrics (a report written "
            f"before robench computed them, or a suite that does not ask for them): "
            f"{', '.join(unknown)}."
        )
    for pair in _paired_results(baseline, candidate):
        for metric in (m for m in pair[0].metrics if m not in unknown):
            tolerance, rule = policy.tolerance_for(pair[0].name, metric)
            used_rules.add(rule)
            checks.append(_check(baseline, candidate, pair, metric, tolerance, policy))
    found, aggregate_notes, aggregate_rules = aggregate_checks(baseline, candidate, policy)
    checks = decide_family(checks + found, policy)
    notes += aggregate_notes
    used_rules |= aggregate_rules
    built_in = Policy().rules  # the default's rules need not match (e.g. top1 on text)
    for i, unused in enumerate(policy.rules):
        if i not in used_rules and unused not in built_in:
            notes.append(
                f"policy rule {i + 1} (perturbation {unused.perturbation!r}, metric "
                f"{unused.metric!r}) matched no check; check its patterns."
            )
    for check in checks:
        logger.debug("%s: %s, %s", check.name, check.status.value, check.detail)
    return GateResult(baseline, candidate, policy, checks, notes)


def _paired_test(
    baseline: Report,
    candidate: Report,
    perturbation: str,
    metric: str,
    higher: bool,
    policy: Policy,
) -> PairedTest | None:
    registered = find_metric(metric)
    if registered is None:
        return None
    base = registered.values_in(baseline, perturbation)
    cand = registered.values_in(candidate, perturbation)
    if base is None or cand is None:
        return None
    _check_numbers(base, "baseline", perturbation, metric)
    _check_numbers(cand, "candidate", perturbation, metric)
    if len(base) != len(cand):
        raise ConfigError(
            f"cannot gate: {perturbation}/{metric} has {len(base)} per-sample values in the "
            f"baseline but {len(cand)} in the candidate; evaluate both on the same samples."
        )
    if registered.statistic is not None:
        return _bootstrap(base, cand, higher, policy, registered.statistic)
    return _TESTS[registered.paired_test](base, cand, higher, policy)
