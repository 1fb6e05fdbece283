"""Certified accuracy against the L2 radius, read from a randomized-smoothing result's
per-sample columns (results/stats/certificates.py).

The curve is `robustness_curves.step_curve` over each sample's certified radius (0 for wrong
or abstained samples; docs/formats.md, "Randomized smoothing"). Unlike a minimal-norm curve it
has no cap: a certificate is computed whole, so the curve runs to the largest radius found
(or listed). Torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence

from robench._core.errors import ConfigError
from robench.results.report.schema import MetricValue, PerturbationResult, Report
from robench.results.stats import certificates as cert
from robench.results.stats.metrics import METRICS
from robench.results.stats.robustness_curves import REPORT_FIX, Curve, accuracy_at, step_curve

KIND = "randomized-smoothing"


def is_certified(result: PerturbationResult) -> bool:
    return result.kind == KIND


def certified_radii(
    report: Report, result: PerturbationResult, where: str = "the report"
) -> list[float] | None:
    """Each sample's certified radius (0 when wrong or abstained), None when the report has
    no certificate columns; columns that do not fit the result's samples are refused."""
    columns = {name: report.sample_values(result.name, name) for name in cert.COLUMNS}
    if any(values is None for values in columns.values()):
        return None
    targets = report.samples[result.dataset].targets[: result.n_samples]
    if any(len(values or []) != result.n_samples for values in columns.values()):
        raise ConfigError(
            f"{where}'s randomized-smoothing result {result.name!r} has certificate columns "
            f"of other lengths than its {result.n_samples} samples; {REPORT_FIX}."
        )
    radii = []
    for i, target in enumerate(targets):
        record = {name: values[i] for name, values in columns.items() if values is not None}
        radius = record[cert.RADIUS]
        if not cert.is_radius(radius) or not isinstance(record[cert.ABSTAINED], bool):
            raise ConfigError(
                f"{where}'s randomized-smoothing result {result.name!r} holds radius {radius!r}"
                f" and abstained {record[cert.ABSTAINED]!r} for a sample, where a radius is a "
                f"number >= 0 and abstained true or false; {REPORT_FIX}."
            )
        radii.append(cert.certified_radius_of({**record, "y": target}))
    return radii


def listed_radii(result: PerturbationResult) -> list[float]:
    """The radii the result's entry reported certified accuracy at (`radii`)."""
    listed = result.params.get("radii")
    if not isinstance(listed, list | tuple):
        return []
    return [float(r) for r in listed if cert.is_radius(r)]


def certified_curve(
    report: Report, result: PerturbationResult, where: str = "the report"
) -> Curve | None:
    """Certified accuracy against the radius from 0 to the largest radius certified or
    listed; None when the report has no certificate columns."""
    radii = certified_radii(report, result, where)
    if radii is None:
        return None
    end = max([*radii, *listed_radii(result), 0.0]) or 1.0
    return step_curve(result.name, radii, end * 1.05)


def with_certified_at(report: Report, radii: Sequence[float], where: str = "the report") -> Report:
    """`report` with `certified_accuracy@R` (and its Wilson interval) added to every
    randomized-smoothing result for each R of `radii` (what `compare --at-radius` shows)."""
    results = []
    for result in report.results:
        found = certified_radii(report, result, where) if is_certified(result) else None
        if found is None:
            results.append(result)
            continue
        metrics = dict(result.metrics)
        for radius in radii:
            value, ci95 = accuracy_at(found, radius)
            member = METRICS.get("certified_accuracy").at(radius)
            metrics[member.name] = MetricValue(value=value, ci95=ci95, higher_is_better=True)
        results.append(result.model_copy(update={"metrics": metrics}))
    return report.model_copy(update={"results": results})
