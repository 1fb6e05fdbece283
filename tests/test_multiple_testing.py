"""Family-wise control in the gate: Holm (default), Benjamini-Hochberg and none, checked by
hand-computed values, by simulated gates of 20 null checks, and end to end."""

from __future__ import annotations

import random

import pytest

from robench.results.gate.checks import Check, PairedTest, Status, decide_family
from robench.results.gate.policy import Policy, Tolerance
from robench.results.gate.regression import run_gate
from robench.results.stats.multiple_testing import benjamini_hochberg, holm
from robench.results.stats.paired_tests import mcnemar_exact
from tests.report_factory import flip, make_report

P = [0.01, 0.04, 0.03, 0.005]


def test_holm_and_bh_match_hand_computed_values() -> None:
    # Holm: sorted 0.005 x 4, 0.01 x 3, 0.03 x 2, 0.04 x 1, each at least the one before.
    assert holm(P) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: m p / rank = 0.02, 0.02, 0.04, 0.04, each at most the one after (sorted ascending).
    assert benjamini_hochberg(P) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0]  # capped at 1
    assert holm([]) == [] and benjamini_hochberg([0.2]) == [0.2]


def _null_check(rng: random.Random, n: int = 1000, discordant: float = 0.1) -> Check:
    """A check of two equally good models: each sample disagrees with probability
    `discordant`, either way with probability 1/2; any drop is beyond a zero tolerance."""
    d = sum(rng.random() < discordant for _ in range(n))
    b = sum(rng.random() < 0.5 for _ in range(d))  # baseline right, candidate wrong
    c = d - b
    test = PairedTest("exact McNemar", mcnemar_exact(b, c, "greater"), None)
    return Check("p", "top1", True, 0.8, 0.8 - (b - c) / n, n, (b - c) / n, 0.0, test,
                 Status.passed, "", tolerance_text="0.00 pp")  # fmt: skip


def _false_alarm_rate(method: str, runs: int, checks: int = 20) -> float:
    rng = random.Random(0)
    policy = Policy(multiple_testing=method)  # type: ignore[arg-type]
    alarms = 0
    for _ in range(runs):
        decided = decide_family([_null_check(rng) for _ in range(checks)], policy)
        alarms += any(c.status is Status.regressed for c in decided)
    return alarms / runs


@pytest.mark.slow
def test_twenty_null_checks_raise_a_false_alarm_at_most_alpha_of_the_time() -> None:
    runs = 2000
    # Unadjusted, 20 one-sided exact McNemar tests at 0.05 (conservative: each rejects less
    # than 5%) still alarm in most gates: 0.555 of these 2000 seeded gates.
    assert _false_alarm_rate("none", runs) > 0.3
    holm_rate = _false_alarm_rate("holm", runs)
    assert holm_rate <= 0.05  # 0.0355 of these 2000 seeded gates
    # Under the global null every rejection is false, so BH's FDR guarantee is a FWER one.
    assert _false_alarm_rate("benjamini-hochberg", runs) <= 0.05  # 0.0365


def test_a_gate_of_twenty_checks_decides_on_adjusted_p_values() -> None:
    names = [f"fgsm-{i}" for i in range(10)]
    baseline = make_report("deit_tiny", dict.fromkeys(names, 0.5), n=1000)
    candidate = flip(baseline, "fgsm-3", to_wrong=6)  # b = 6, c = 0: p = 0.5^6 = 0.0156
    strict = {"default": Tolerance(max_abs_drop=0.0), "rules": []}  # every drop is tested
    raw = run_gate(baseline, candidate, Policy(**strict, multiple_testing="none"))
    adjusted = run_gate(baseline, candidate, Policy(**strict))
    raw_check = next(c for c in raw.checks if c.name == "fgsm-3/top1")
    check = next(c for c in adjusted.checks if c.name == "fgsm-3/top1")
    assert raw_check.status is Status.regressed
    assert len(adjusted.checks) == 20 and check.test is not None
    assert check.test.p_value == pytest.approx(0.5**6)
    assert check.test.adjusted_p == pytest.approx(min(1.0, 20 * 0.5**6))  # Holm, smallest p
    assert check.status is Status.inconclusive
    assert "p = 0.0156, Holm-adjusted 0.312 > alpha 0.05" in check.detail
