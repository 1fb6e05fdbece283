"""Expectation over transformation (EOT) on a model without randomness: warned, not refused
(docs/formats.md, "Expectation over transformation"). A transfer attack is crafted on its
surrogate, so it is the surrogate's randomness that counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from robench.evaluation.runner import Surrogate
from robench.evaluation.suites import PlannedPerturbation, SurrogateRef


def eot_warnings(
    plan: Sequence[PlannedPerturbation],
    randomized: bool,
    surrogates: Mapping[SurrogateRef, Surrogate],
) -> list[str]:
    """One warning naming the entries that ask for EOT (more than one sample) of a model
    whose two forward passes on the same input agree; none when there are none."""
    wasted = []
    for planned in plan:
        samples = planned.params.gradient_samples()
        attacked_randomized = randomized
        if planned.surrogate is not None and planned.surrogate in surrogates:
            attacked_randomized = bool(surrogates[planned.surrogate].info["randomized"])
        if samples is not None and samples > 1 and not attacked_randomized:
            wasted.append(f"{planned.label} ({samples})")
    if not wasted:
        return []
    return [
        f"eot_samples on a deterministic model (two forward passes on the same input agree): "
        f"{', '.join(wasted)} average(s) identical gradients, so each makes plain PGD's or "
        "APGD's images at eot_samples times the cost; drop eot_samples for this model."
    ]
