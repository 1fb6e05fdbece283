"""Parameters of the `randomized-smoothing` kind, validated without torch (suites, `robench
list perturbations`); the implementation (`smoothing.py`) is imported when a run needs it."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from pydantic import PositiveInt, field_validator

from robench.perturbations.base import FORWARD_PASS, PerturbationParams, register_kind
from robench.results.stats.certificates import COLUMNS

# Radii (L2, pixel units) certified accuracy is reported at when the suite lists none: the
# grid of Cohen et al.'s CIFAR-10 table, up to 1.
DEFAULT_RADII = (0.0, 0.25, 0.5, 0.75, 1.0)


@register_kind(
    "randomized-smoothing", "robench.perturbations.certification.smoothing:RandomizedSmoothing"
)
class RandomizedSmoothingParams(PerturbationParams):
    """Certified L2 radius per sample by randomized smoothing (Cohen, Rosenfeld and Kolter,
    ICML 2019, CERTIFY): `n0` Gaussian noisy copies (std `sigma`, pixel units, added before the
    model's normalisation) pick the candidate class, `n` more give the one-sided
    Clopper-Pearson lower bound pA at level 1 - `alpha`, and the radius is sigma Phi^-1(pA),
    or the sample abstains when pA <= 1/2. The scored input is the clean image; the
    certificate is in the per-sample columns (docs/formats.md, "Attack columns") and the
    metrics `certified_accuracy@R` (each of `radii`), `acr` and `abstention_rate`."""

    display: ClassVar[str | None] = "Randomized smoothing"
    columns: ClassVar[tuple[str, ...]] = COLUMNS

    sigma: float  # std of the Gaussian noise, pixel units ([0, 1] scale)
    n0: PositiveInt = 100  # selection draws: the candidate class is their majority
    n: PositiveInt = 100_000  # estimation draws: the candidate's count gives pA
    alpha: float = 0.001  # in (0, 1): the certificate fails with probability <= alpha
    batch: PositiveInt = 1_000  # noisy copies per forward pass
    # L2 radii (pixel units) certified accuracy is reported at: `certified_accuracy@R`.
    radii: tuple[float, ...] = DEFAULT_RADII

    @field_validator("sigma", mode="before")
    @classmethod
    def _positive_sigma(cls, value: Any) -> float:
        from robench._core.units import parse_pixel_value

        sigma = parse_pixel_value(value, "sigma")
        if not sigma > 0:
            raise ValueError(f"sigma must be > 0 (pixel units), got {sigma:g}")
        return sigma

    @field_validator("n0", "n", "batch", mode="before")
    @classmethod
    def _whole_number(cls, value: Any) -> Any:
        # pydantic would take 100.0 (and "100") as 100; a count written as 1e5 or 0.5 is a
        # mistake worth a sentence.
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"must be a positive integer, got {value!r}")
        return value

    @field_validator("alpha", mode="before")
    @classmethod
    def _probability(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
            raise ValueError(f"alpha must lie strictly between 0 and 1, got {value!r}")
        return value

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
