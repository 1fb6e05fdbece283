"""One gate check: its outcome, how a drop is classified against the policy, and how amounts
are shown; shared by the checks of results (`regression.py`) and of aggregates.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from robench._core.errors import ConfigError
from robench.results.gate.policy import Policy, Tolerance
from robench.results.stats.metrics import MetricDisplay, metric_display
from robench.results.stats.multiple_testing import adjust

_EPS = 1e-12  # float slack when comparing a drop with its allowance


class Status(str, enum.Enum):
    """Outcome of one check, ordered from best to worst."""

    passed = "pass"
    inconclusive = "inconclusive"
    regressed = "regressed"


@dataclass(frozen=True)
class PairedTest:
    """A paired test of "candidate worse": its description, p-value and samples needed."""

    name: str
    p_value: float
    samples_needed: int | None
    # The p-value adjusted across the gate's checks (policy.multiple_testing), which alpha
    # decides on; None until the gate has every check (`decide_family`).
    adjusted_p: float | None = None
    adjustment: str | None = None  # "holm", "benjamini-hochberg" or "none"

    @property
    def deciding_p(self) -> float:
        return self.p_value if self.adjusted_p is None else self.adjusted_p

    def p_text(self) -> str:
        """`p = 0.012` or `p = 0.012, Holm-adjusted 0.048`."""
        text = f"p = {self.p_value:.3g}"
        if self.adjusted_p is None or self.adjustment in (None, "none"):
            return text
        return f"{text}, {ADJUSTMENT_NAMES[self.adjustment]}-adjusted {self.adjusted_p:.3g}"


ADJUSTMENT_NAMES = {"holm": "Holm", "benjamini-hochberg": "BH", "none": "unadjusted"}


@dataclass(frozen=True)
class Check:
    """One perturbation x metric, or one aggregate (`perturbation` its name, `mce@imagenet-c`,
    `metric` its kind, `mce`: what policy rules match), compared between the two reports."""

    perturbation: str
    metric: str
    higher_is_better: bool
    baseline: float  # stored units (fractions for accuracies, AlexNet = 1.0 for mCE)
    candidate: float
    n: int  # paired samples
    drop: float  # positive when the candidate is worse
    allowed: float | None = None  # allowed drop; None when the policy ignores the check
    test: PairedTest | None = None  # None without per-sample values
    status: Status = Status.passed  # set by `judged`
    detail: str = ""  # one sentence saying why
    aggregate: bool = False  # an aggregate over results, not a single result
    display: MetricDisplay | None = None  # how values are shown; default: the metric's
    tolerance_text: str = ""  # the allowed drop in words, for `detail`

    @property
    def name(self) -> str:
        return self.perturbation if self.aggregate else f"{self.perturbation}/{self.metric}"

    @property
    def shown(self) -> MetricDisplay:
        return self.display if self.display is not None else metric_display(self.metric)


def display_amount(display: MetricDisplay, amount: float) -> str:
    """A stored-unit amount as `display` shows it: `3.00 pp`, `2.10` (mCE), `1.25` (raw)."""
    unit = f" {display.diff_unit}" if display.diff_unit else ""
    return f"{amount * display.scale:.2f}{unit}"


def _verdict(check: Check, policy: Policy) -> tuple[Status, str]:
    """Pass, regressed or inconclusive, and the sentence that says why."""
    drop, allowed, test, n = check.drop, check.allowed, check.test, check.n
    if allowed is None:
        return Status.passed, "ignored by the policy."
    if abs(drop) <= _EPS:
        return Status.passed, "no change."
    if drop < 0:
        return Status.passed, f"improved by {display_amount(check.shown, -drop)}."
    shown = display_amount(check.shown, drop)
    if drop <= allowed + _EPS:
        return Status.passed, f"drop of {shown} within {check.tolerance_text}."
    beyond = f"drop of {shown} exceeds {check.tolerance_text}"
    if test is None:
        return Status.inconclusive, (
            f"{beyond}, but the reports carry no per-sample {check.metric} values to test it."
        )
    if test.deciding_p <= policy.alpha:
        return Status.regressed, (
            f"{beyond} and is significant ({test.p_text()} <= alpha {policy.alpha:g})."
        )
    # The estimate is a normal approximation; never claim fewer samples than already failed.
    needed = max(test.samples_needed or 0, n + 1)
    return Status.inconclusive, (
        f"{beyond} but is not significant on {n} samples ({test.p_text()} > alpha "
        f"{policy.alpha:g}); about {needed} samples would be needed to detect it with "
        f"{policy.power:.0%} power."
    )


def judged(check: Check, policy: Policy, tolerance: Tolerance | None = None) -> Check:
    """`check` with its status and the sentence that says why; given `tolerance`, first with
    the drop it allows from the check's baseline value."""
    if tolerance is not None:
        allowed = tolerance.allowed_drop(check.baseline)
        text = tolerance_text(check.shown, tolerance, allowed)
        check = replace(check, allowed=allowed, tolerance_text=text)
    status, detail = _verdict(check, policy)
    return replace(check, status=status, detail=detail)


def decide_family(checks: list[Check], policy: Policy) -> list[Check]:
    """Adjust the p-values of all tested checks together (every check the policy does not
    ignore, whatever its drop: choosing the family by the observed drops would void the
    guarantee) and classify each check again on its adjusted p-value."""
    family = [i for i, c in enumerate(checks) if c.test is not None and c.allowed is not None]
    tests = [checks[i].test for i in family]
    adjusted = adjust([t.p_value for t in tests if t is not None], policy.multiple_testing)
    decided = list(checks)
    for i, p in zip(family, adjusted, strict=True):
        check = checks[i]
        assert check.test is not None
        test = replace(check.test, adjusted_p=p, adjustment=policy.multiple_testing)
        decided[i] = judged(replace(check, test=test), policy)
    return decided


def check_policy_units(what: str, display: MetricDisplay, tolerance: Tolerance) -> None:
    """Refuse an absolute limit written in display units (2 for 2 pp) instead of stored ones."""
    limit = tolerance.max_abs_drop
    if display.scale != 1.0 and limit is not None and limit > 1.0:
        points = "percentage points" if display.diff_unit == "pp" else f"{display.label} points"
        raise ConfigError(
            f"gate policy allows an absolute drop of {limit:g} on {what}, which is stored as "
            f"a fraction; write {limit / display.scale:g} for {limit:g} {points}."
        )


def _limits(display: MetricDisplay, tolerance: Tolerance, relative: str) -> list[str]:
    """The limits set, in display units: `2.00 pp`, `5% rel.` (`relative` names the base)."""
    parts = []
    if tolerance.max_abs_drop is not None:
        parts.append(display_amount(display, tolerance.max_abs_drop))
    if tolerance.max_rel_drop is not None:  # `:g`, as `:.0%` would round 0.005 to `0%`
        parts.append(f"{100 * tolerance.max_rel_drop:g}% {relative}")
    return parts


def tolerance_text(display: MetricDisplay, tolerance: Tolerance, allowed: float | None) -> str:
    if allowed is None:
        return "ignored"
    parts = _limits(display, tolerance, "rel.")
    text = " and ".join(parts)
    return text if len(parts) == 1 else f"{text} (= {display_amount(display, allowed)})"


def _limit_text(metric: str, tolerance: Tolerance) -> str:
    """A tolerance in words and the metric's display units: `2.00 pp`, `5% of the baseline`."""
    if tolerance.ignore:
        return "ignored"
    return " and ".join(_limits(metric_display(metric), tolerance, "of the baseline"))


def policy_text(policy: Policy) -> str:
    """What `policy` allows, in words (`gate --help` shows the built-in policy's): alpha, each
    rule, each metric's own default (grouped), then the default for any other check."""
    parts = [f"alpha {policy.alpha:g}, p-values adjusted by {policy.multiple_testing}"]
    parts += [
        f"{rule.perturbation}/{rule.metric} may drop {_limit_text(rule.metric, rule)}"
        for rule in policy.rules
    ]
    groups: dict[str, list[str]] = {}
    for metric, tolerance in policy.metric_defaults.items():
        groups.setdefault(_limit_text(metric, tolerance), []).append(metric)
    parts += [f"{', '.join(names)} {text}" for text, names in groups.items()]
    default = policy.default
    other = _limit_text("top1", default)
    if default.max_abs_drop is not None and not default.ignore:
        other = f"{default.max_abs_drop:g} in stored units ({other} of an accuracy)"
    parts.append(f"any other metric or aggregate {other}")
    return "; ".join(parts)
