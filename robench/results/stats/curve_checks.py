"""Always-on checks of the curves attacks record (results/stats/robustness_curves.py), as
docs/formats.md ("Minimal-norm attacks") and docs/sanity.md describe them:
- `minimal_norm_at_most_pgd`: a minimal-norm curve at PGD's eps lies wholly above PGD's
  interval: the minimal-norm attack is weaker there (too few steps, too small a step);
- `converged`: accuracy against iterations still falls in the last 20% of the iterations;
- `certificate_vs_attack` (`certificate_checks.py`): certificates against attacks on the
  smoothed classifier.
"""

from __future__ import annotations

import math

from robench._core.units import display_pixel_value
from robench.results.report.schema import PerturbationResult, Report, SanityResult
from robench.results.stats.certificate_checks import check_certificates
from robench.results.stats.robustness_curves import (
    STILL_FALLING_SHARE,
    accuracy_at,
    is_minimal_norm,
    iteration_curve,
    result_cap,
    result_norms,
)

METRIC = "top1"
# Fewer iterations than this are a quick check, not an attack run to convergence: with 5, the
# last 20% is one step, and PGD-5 at 8/255 still gains in its last step on any model.
MIN_JUDGED_STEPS = 10


def _norm(result: PerturbationResult) -> str:
    return str(result.params.get("norm", "linf")).lower()


def check_minimal_norm(report: Report) -> list[SanityResult]:
    """One check per (minimal-norm result, PGD result) of one threat model and dataset with
    PGD's eps at most the cap."""
    checks = []
    for curve in filter(is_minimal_norm, report.results):
        norms = result_norms(report, curve)
        if norms is None:
            continue
        for pgd in report.results:
            eps = pgd.params.get("eps")
            if (
                pgd.kind != "pgd"
                or pgd.params.get("surrogate") is not None  # transfer: no white-box bound
                or pgd.dataset != curve.dataset
                or _norm(pgd) != _norm(curve)
                or not isinstance(eps, float)
                or eps > result_cap(curve)
                or METRIC not in pgd.metrics
            ):
                continue
            n = pgd.n_samples  # both hold the first n sorted indices
            if len(norms) < n:
                continue  # PGD ran on more samples than the curve: not the same samples
            value, (low, high) = accuracy_at(norms[:n], eps)
            strong = pgd.metrics[METRIC]
            ok = low <= strong.ci95[1]  # the intervals overlap, or the curve is lower
            shown = display_pixel_value(eps) if _norm(pgd) == "linf" else f"{eps:g}"
            detail = (
                f"{curve.name} {100 * value:.2f}% [{100 * low:.2f}, {100 * high:.2f}] vs "
                f"{pgd.name} {100 * strong.value:.2f}% [{100 * strong.ci95[0]:.2f}, "
                f"{100 * strong.ci95[1]:.2f}] top-1 at eps {shown} on {n} samples"
            )
            if_warn = (
                "the minimal-norm attack is weaker than PGD at this eps (its interval lies "
                "above PGD's); give it more steps or a larger step size"
            )
            name = f"minimal_norm_at_most_pgd:{curve.name}:{pgd.name}"
            values = {"minimal_norm": value, "pgd": strong.value, "eps": eps}
            checks.append(SanityResult.verdict(name, ok, detail, if_warn, values, end="."))
    return checks


def check_convergence(report: Report) -> list[SanityResult]:
    """One check per result with recorded iterations (at least `MIN_JUDGED_STEPS`): still
    falling in the last 20%?"""
    checks = []
    for result in report.results:
        curve = iteration_curve(report, result)
        if curve is None or curve.n == 0:
            continue
        steps = len(curve.x) - 1
        if steps < MIN_JUDGED_STEPS:
            continue
        start = math.floor((1 - STILL_FALLING_SHARE) * steps)
        ok = curve.value[start] <= curve.value[-1]  # no drop in the last 20%
        detail = (
            f"{result.name}: {100 * curve.value[start]:.2f}% after {start} of {steps} steps, "
            f"{100 * curve.value[-1]:.2f}% after {steps} (best iterate so far, {curve.n} samples)"
        )
        if_warn = (
            f"still falling in the last {100 * STILL_FALLING_SHARE:g}% of its iterations, so "
            "the attack had not converged; raise `steps`, and if more steps keep lowering it, "
            "run `robench eval --sanity` (gradient masking)"
        )
        values = {"at_80_percent": curve.value[start], "at_end": curve.value[-1]}
        checks.append(
            SanityResult.verdict(f"converged:{result.name}", ok, detail, if_warn, values, end=".")
        )
    return checks


def check_curves(report: Report) -> list[SanityResult]:
    """Every curve check of a report, certificates against L2 attacks included."""
    return check_minimal_norm(report) + check_convergence(report) + check_certificates(report)
