"""Always-on check of randomized-smoothing certificates against attacks on the smoothed
classifier in the same report (`certificate_vs_attack`). The rule, and why attacks on the
base classifier get no check: docs/formats.md, "Randomized smoothing". A violation needs the
certificate to fail (probability <= its alpha) or PREDICT to name another class than g's (<=
the attack's alpha), hence the Binomial(certified, alpha_cert + alpha_predict) bound.
"""

from __future__ import annotations

import logging
import math

from robench.results.report.schema import PerturbationResult, Report, SanityResult
from robench.results.stats import certificates as cert
from robench.results.stats.certified_curves import certified_radii, is_certified

logger = logging.getLogger(__name__)

SURPRISE = 0.05  # warn at more violations than a sound certificate gives with prob. 1 - this
SMOOTHED_ATTACK = "smoothed-pgd"  # the kind that attacks g and records PREDICT at its image
_BASE_L2 = ("pgd", "minimal-norm")  # L2 attacks on the base classifier: they test no certificate
_IF_WARN = (
    "the certificate is unsound; check sigma, n and alpha, and that the model certified is the "
    "model attacked"
)


def _allowed(certified: int, alpha: float) -> int:
    """The most violations a sound certificate gives with probability >= 1 - SURPRISE."""
    from scipy.stats import binom

    return int(binom.ppf(1 - SURPRISE, certified, min(alpha, 1.0))) if certified else 0


def _number(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else None  # type: ignore[arg-type]


def _tests(cert_result: PerturbationResult, attack: PerturbationResult) -> bool:
    """Whether `attack` attacks the smoothed classifier `cert_result` certifies."""
    sigma, attack_sigma = (_number(r.params.get("sigma")) for r in (cert_result, attack))
    return (
        attack.kind == SMOOTHED_ATTACK
        and attack.dataset == cert_result.dataset
        and sigma is not None
        and attack_sigma is not None
        and math.isclose(sigma, attack_sigma)
    )


def _flips(report: Report, attack: PerturbationResult, targets: list[int]) -> list[bool] | None:
    """Per sample: the smoothed prediction at the attack's image names a class other than the
    label (an abstention is no flip); None without PREDICT columns."""
    predictions = report.sample_values(attack.name, cert.PREDICTION)
    if predictions is None:
        return None
    return [p is not None and p != y for p, y in zip(predictions, targets, strict=False)]


def check_certificates(report: Report) -> list[SanityResult]:
    """One check per (randomized-smoothing result, smoothed-pgd result of its sigma)."""
    checks = []
    for certified in filter(is_certified, report.results):
        radii = certified_radii(report, certified)
        alpha = _number(certified.params.get("alpha"))
        if radii is None or alpha is None:
            continue
        targets = report.samples[certified.dataset].targets
        tested = False
        for attack in report.results:
            eps, attack_alpha = (_number(attack.params.get(key)) for key in ("eps", "alpha"))
            flipped = _flips(report, attack, targets) if _tests(certified, attack) else None
            if flipped is None or eps is None or attack_alpha is None:
                continue
            tested = True
            n = min(len(radii), len(flipped))  # both hold the first n sorted indices
            beyond = [i for i in range(n) if radii[i] > eps]
            broken = sum(flipped[i] for i in beyond)
            allowed = _allowed(len(beyond), alpha + attack_alpha)
            detail = (
                f"the smoothed classifier's prediction at {attack.name}'s images names another "
                f"class on {broken} of the {len(beyond)} samples {certified.name} certifies "
                f"beyond L2 radius {eps:g} ({n} samples; a sound certificate allows {allowed} "
                f"at alpha {certified.params.get('alpha')} plus PREDICT's "
                f"{attack.params.get('alpha')})"
            )
            values = {"radius": eps, "certified": len(beyond), "broken": broken, "allowed": allowed}
            name = f"certificate_vs_attack:{certified.name}:{attack.name}@{eps:g}"
            checks.append(
                SanityResult.verdict(name, broken <= allowed, detail, _IF_WARN, values, ".")
            )
        if not tested and any(_base_l2(a) for a in report.results):
            logger.info(
                "certificate %s is not compared with this report's L2 attacks: they attack "
                "the base classifier, which may be broken inside the smoothed classifier's "
                "radius; a smoothed-pgd entry of sigma %s tests the certificate",
                certified.name,
                certified.params.get("sigma"),
            )
    return checks


def _base_l2(result: PerturbationResult) -> bool:
    return result.kind in _BASE_L2 and str(result.params.get("norm", "linf")).lower() == "l2"
