"""Always-on check of randomized-smoothing certificates against empirical L2 attacks in the
same report (`certificate_vs_attack`).

A sample certified at r (right, radius > r) that an L2 attack flipped within r: PGD-L2 at eps
r (its per-sample `top1` false), or FMN/FAB-L2 (`min_norm` <= r, at each radius the
certificate lists up to the attack's cap). Per sample a sound certificate fails with
probability at most alpha, so the check warns when such samples outnumber what alpha allows
(the count a Binomial(certified, alpha) exceeds with probability below 5%).

What it can and cannot say: robench's attacks run on the model as evaluated, the base
classifier f, while the certificate is about the smoothed classifier g (f's vote under
Gaussian noise). f may be broken inside g's certified radius without any contradiction (f is
typically less robust than g, and may be wrong where g is right). So a warning proves an
unsound certificate only when the attack's predictions are g's; for base-classifier attacks
it says that the base classifier is far less robust than its smoothed version there, and
the detail says so.
"""

from __future__ import annotations

from collections.abc import Iterator

from robench.results.report.schema import PerturbationResult, Report, SanityResult
from robench.results.stats.certified_curves import certified_radii, is_certified, listed_radii
from robench.results.stats.robustness_curves import NORM_COLUMN, norm_values

SURPRISE = 0.05  # warn at more breaks than a sound certificate gives with probability 1 - this


def _allowed(certified: int, alpha: float) -> int:
    """The most breaks a sound certificate gives with probability >= 1 - SURPRISE."""
    from scipy.stats import binom

    return int(binom.ppf(1 - SURPRISE, certified, alpha)) if certified else 0


def _l2(result: PerturbationResult) -> bool:
    return str(result.params.get("norm", "linf")).lower() == "l2"


def _breaks(
    report: Report, cert: PerturbationResult, attack: PerturbationResult
) -> Iterator[tuple[float, list[bool]]]:
    """(radius r, attack flipped the sample within r) pairs to hold the certificate to."""
    if attack.kind == "pgd":  # at its eps: flipped when the re-run is wrong
        correct = report.sample_values(attack.name, "top1")
        eps = attack.params.get("eps")
        if correct is not None and isinstance(eps, float):
            yield eps, [not ok for ok in correct]
    elif attack.kind == "minimal-norm":  # at each listed radius up to its cap
        norms = report.sample_values(attack.name, NORM_COLUMN)
        cap = attack.params.get("eps")
        if norms is None or not isinstance(cap, float):
            return
        values = norm_values(norms)
        for radius in listed_radii(cert):
            if 0 < radius <= cap:
                yield radius, [n <= radius for n in values]


def check_certificates(report: Report) -> list[SanityResult]:
    """One check per (randomized-smoothing result, L2 attack, radius) on one dataset."""
    checks = []
    for cert in filter(is_certified, report.results):
        radii = certified_radii(report, cert)
        alpha = cert.params.get("alpha")
        if radii is None or not isinstance(alpha, float):
            continue
        for attack in report.results:
            if attack.dataset != cert.dataset or not _l2(attack):
                continue
            for radius, flipped in _breaks(report, cert, attack):
                n = min(len(radii), len(flipped))  # both hold the first n sorted indices
                beyond = [i for i in range(n) if radii[i] > radius]
                broken = sum(flipped[i] for i in beyond)
                allowed = _allowed(len(beyond), alpha)
                checks.append(_check(cert, attack, radius, n, len(beyond), broken, allowed))
    return checks


def _check(
    cert: PerturbationResult,
    attack: PerturbationResult,
    radius: float,
    n: int,
    certified: int,
    broken: int,
    allowed: int,
) -> SanityResult:
    ok = broken <= allowed
    detail = (
        f"{attack.name} flipped {broken} of the {certified} samples {cert.name} certifies "
        f"beyond L2 radius {radius:g} within that radius ({n} samples; a sound certificate "
        f"allows {allowed} at alpha {cert.params.get('alpha')})"
    )
    if not ok:
        detail += (
            ": if the attack's predictions are the smoothed classifier's, the certificate is "
            "unsound (check sigma, n and alpha); robench's attacks run on the base classifier, "
            "which may be broken inside the smoothed classifier's radius without a "
            "contradiction, so here it shows the base classifier far less robust than its "
            "certificate"
        )
    return SanityResult(
        name=f"certificate_vs_attack:{cert.name}:{attack.name}@{radius:g}",
        status="pass" if ok else "warn",
        detail=detail + ".",
        values={"radius": radius, "certified": certified, "broken": broken, "allowed": allowed},
    )
