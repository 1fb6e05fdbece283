"""Parameters of the `randomized-smoothing` and `smoothed-pgd` kinds, validated without torch."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import PositiveInt, field_validator

from robench.perturbations.base import (
    FORWARD_PASS,
    GRADIENT_PASS,
    BoundedParams,
    PerturbationParams,
    optional_step_size,
    positive_pixel_value,
    quarter_eps_step,
    register_kind,
)
from robench.results.stats.certificates import COLUMNS, PREDICT_COLUMNS

# Radii (L2, pixel units) certified accuracy is reported at when the suite lists none: the
# grid of Cohen et al.'s CIFAR-10 table, up to 1.
DEFAULT_RADII = (0.0, 0.25, 0.5, 0.75, 1.0)


def _sigma(value: Any) -> float:
    return positive_pixel_value(value, "sigma")


def _count(value: Any) -> Any:
    # pydantic would take 100.0 (and "100") as 100; a count written as 1e5 is worth a sentence.
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"must be a positive integer, got {value!r}")
    return value


def _alpha(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {value!r}")
    return value


@register_kind(
    "randomized-smoothing", "robench.perturbations.certification.smoothing:RandomizedSmoothing"
)
class RandomizedSmoothingParams(PerturbationParams):
    """Certified L2 radius per sample by randomized smoothing (Cohen, Rosenfeld and Kolter,
    ICML 2019, CERTIFY; smoothing.py); docs/formats.md, "Randomized smoothing"."""

    display: ClassVar[str | None] = "Randomized smoothing"
    columns: ClassVar[tuple[str, ...]] = COLUMNS
    metrics: ClassVar[tuple[str, ...]] = ("certified_accuracy", "acr", "abstention_rate")

    sigma: float  # std of the Gaussian noise, pixel units ([0, 1] scale)
    n0: PositiveInt = 100  # selection draws: the candidate class is their majority
    n: PositiveInt = 100_000  # estimation draws: the candidate's count gives pA
    alpha: float = 0.001  # in (0, 1): the certificate fails with probability <= alpha
    batch: PositiveInt = 1_000  # noisy copies per forward pass
    # L2 radii (pixel units) certified accuracy is reported at: `certified_accuracy@R`.
    radii: tuple[float, ...] = DEFAULT_RADII

    _positive_sigma = field_validator("sigma", mode="before")(_sigma)
    _whole_number = field_validator("n0", "n", "batch", mode="before")(_count)
    _probability = field_validator("alpha", mode="before")(_alpha)

    @classmethod
    def threat_summary(cls) -> str | None:
        # Not an attack: a per-sample guarantee, over every L2 perturbation within the radius.
        return "certified L2 (no eps; a radius per sample)"

    @field_validator("radii", mode="before")
    @classmethod
    def _radii(cls, value: Any) -> Any:
        if not isinstance(value, list | tuple) or not value:
            raise ValueError(f"radii must be a non-empty list of radii >= 0, got {value!r}")
        for radius in value:
            if isinstance(radius, bool) or not isinstance(radius, int | float):
                raise ValueError(f"radii must be numbers >= 0, got {radius!r}")
            if not (math.isfinite(radius) and radius >= 0):
                raise ValueError(f"radii must be >= 0 (L2, pixel units), got {radius:g}")
        return tuple(sorted(set(map(float, value))))

    def passes_per_sample(self, classes: int = 10) -> int:
        # A forward per noisy copy, and the runner's re-run of the clean image.
        return FORWARD_PASS * (self.n0 + self.n + 1)


@register_kind("smoothed-pgd", "robench.perturbations.certification.smoothed_pgd:SmoothedPGD")
class SmoothedPGDParams(BoundedParams):
    """PGD-L2 on the smoothed classifier (Salman et al., NeurIPS 2019, SmoothAdv;
    smoothed_pgd.py), then PREDICT at its image: the one attack a `randomized-smoothing`
    certificate of the same sigma is checked against (docs/formats.md, "Randomized
    smoothing")."""

    display: ClassVar[str | None] = "SmoothAdv-PGD"
    columns: ClassVar[tuple[str, ...]] = PREDICT_COLUMNS

    norm: Literal["l2"] = "l2"  # threat model: the certificate's L2 ball
    sigma: float  # std of the smoothing noise, pixel units: the certificate's sigma
    noise_samples: PositiveInt = 8  # m, noise draws per step (Salman et al.: 1 to 8)
    steps: PositiveInt = 10  # gradient steps
    step_size: float | None = None  # pixel units; None means eps / 4, as `pgd`
    n: PositiveInt = 100_000  # PREDICT's noise draws at the adversarial image
    alpha: float = 0.001  # PREDICT returns a class other than g's with probability <= alpha
    batch: PositiveInt = 1_000  # noisy copies per forward pass in PREDICT

    _positive_sigma = field_validator("sigma", mode="before")(_sigma)
    _whole_number = field_validator("noise_samples", "steps", "n", "batch", mode="before")(_count)
    _probability = field_validator("alpha", mode="before")(_alpha)

    _parse_step_size = field_validator("step_size", mode="before")(optional_step_size)
    resolved_step_size = property(quarter_eps_step)  # the step size used

    @classmethod
    def display_name(cls, kind: str, params: Mapping[str, Any]) -> str:
        return f"SmoothAdv-PGD-{params['steps']}" if "steps" in params else "SmoothAdv-PGD"

    def passes_per_sample(self, classes: int = 10) -> int:
        # m gradients per step (none at eps 0), PREDICT's n forwards and the runner's re-run.
        attack = 0 if self.eps == 0 else GRADIENT_PASS * self.steps * self.noise_samples
        return attack + FORWARD_PASS * (self.n + 1)
