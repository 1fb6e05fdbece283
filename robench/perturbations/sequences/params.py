"""The LRA perturbation kinds' parameters, validated without importing torch
(docs/sequence-classification.md)."""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from pydantic import Field, field_validator

from robench._core.units import parse_pixel_value
from robench.perturbations.base import PerturbationParams, register_kind

SEQUENCE_CLASSIFICATION = "sequence-classification"


class _SequenceParams(PerturbationParams):
    unbounded: ClassVar[bool] = True
    task: ClassVar[str | tuple[str, ...] | None] = SEQUENCE_CLASSIFICATION
    # The LRA tasks whose data it edits (robench/data/lra's task names).
    lra_tasks: ClassVar[tuple[str, ...]] = ()


@register_kind(
    "token-substitution",
    "robench.perturbations.sequences.perturbation:TokenSubstitution",
)
class TokenSubstitutionParams(_SequenceParams):
    """A share `rate` of each sequence's real tokens replaced by other vocabulary tokens."""

    display: ClassVar[str | None] = "token substitution"
    lra_tasks: ClassVar[tuple[str, ...]] = ("listops", "text", "retrieval")

    # Share of each sequence's real (non-padding) tokens replaced (edits.substitute_tokens).
    rate: float = Field(gt=0, le=1)


def _intensity(value: Any, what: str, positive: bool = False) -> float:
    parsed = parse_pixel_value(value, what)
    if not 0 <= parsed <= 1:
        raise ValueError(
            f"{what} must lie in [0, 1] (intensity units, e.g. '32/255'), got {value!r}"
        )
    if positive and parsed <= 0:
        raise ValueError(f"{what} must be > 0 (intensity units, e.g. '16/255'), got {value!r}")
    return parsed


@register_kind("pixel-noise", "robench.perturbations.sequences.perturbation:PixelNoise")
class PixelNoiseParams(_SequenceParams):
    """Gaussian noise on every pixel's intensity, rounded and clipped to the intensity range."""

    display: ClassVar[str | None] = "pixel noise"
    lra_tasks: ClassVar[tuple[str, ...]] = ("image", "pathfinder")

    # In intensity units ([0, 1]: darkest to brightest token; "16/255": 16 grey levels), > 0.
    std: float

    _parse_std = field_validator("std", mode="before")(
        partial(_intensity, what="std", positive=True)
    )


@register_kind("pixel-occlusion", "robench.perturbations.sequences.perturbation:PixelOcclusion")
class PixelOcclusionParams(_SequenceParams):
    """A `size` x `size` square of the image painted `value`, at a random place per image."""

    display: ClassVar[str | None] = "occlusion"
    lra_tasks: ClassVar[tuple[str, ...]] = ("image", "pathfinder")

    # Side of the square patch in pixels, >= 1 (at most the image's side, checked on the data).
    size: int = Field(ge=1)
    # Intensity painted over the patch, in [0, 1] (0: black, the LRA images' background).
    value: float = 0.0

    _parse_value = field_validator("value", mode="before")(partial(_intensity, what="value"))
