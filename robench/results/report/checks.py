"""Always-on consistency checks of an evaluation's results: cheap, no extra attacks.

PGD starts where FGSM does and takes more, smaller steps, so at the same eps and on the same
samples it should be at least as strong. PGD weaker than FGSM by more than `TOLERANCE` points
to a weak attack configuration (too few steps, too small a step) or to a model that masks its
gradients; `robench eval --sanity` runs the battery that tells the two apart.
"""

from __future__ import annotations

from collections.abc import Sequence

from robench._core.units import display_pixel_value
from robench.results.report.schema import PerturbationResult, SanityResult

TOLERANCE = 0.02  # top-1 slack (fraction): PGD may be this much weaker than FGSM by chance
METRIC = "top1"


def _key(result: PerturbationResult) -> tuple[float, int] | None:
    eps = result.params.get("eps")
    if not isinstance(eps, float) or METRIC not in result.metrics:
        return None
    if result.params.get("surrogate") is not None:  # transfer: iterative attacks may transfer
        return None  # worse than one-step ones (Kurakin et al. 2017), no sign of a weak attack
    return (eps, result.n_samples)  # same eps, same (first n) samples


def check_attack_order(results: Sequence[PerturbationResult]) -> list[SanityResult]:
    """One `pgd_at_least_fgsm` check per PGD result that has an FGSM at the same eps."""
    fgsm = {key: r for r in results if r.kind == "fgsm" and (key := _key(r)) is not None}
    checks = []
    for pgd in results:
        key = _key(pgd)
        if pgd.kind != "pgd" or key is None or key not in fgsm:
            continue
        weak, strong = pgd.metrics[METRIC].value, fgsm[key].metrics[METRIC].value
        eps = display_pixel_value(key[0])
        ok = weak <= strong + TOLERANCE
        detail = (
            f"{pgd.name} {100 * weak:.2f}% vs {fgsm[key].name} {100 * strong:.2f}% top-1 "
            f"at eps {eps} on {key[1]} samples"
        )
        if_warn = (
            f"PGD is weaker than FGSM by more than {100 * TOLERANCE:g} points, a sign of "
            "a weak attack (too few steps or too small a step) or of gradient masking; "
            "run `robench eval --sanity` to tell which"
        )
        values = {"pgd": weak, "fgsm": strong, "tolerance": TOLERANCE}
        name = f"pgd_at_least_fgsm:{pgd.name}"
        checks.append(SanityResult.verdict(name, ok, detail, if_warn, values, end="."))
    return checks
