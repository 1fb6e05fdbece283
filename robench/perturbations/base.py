"""The perturbation contract and the registry every perturbation kind lives in.

A perturbation takes images in pixel space (float in [0, 1], shape (B, C, H, W)), their true
labels and a model whose normalisation is a layer inside it, and returns perturbed images of
the same shape. The runner checks what comes back (eps-ball, [0, 1], finite) and re-runs the
model on it; a perturbation never reports accuracy itself.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import torch
from pydantic import BaseModel, ConfigDict, field_validator

from robench.pixel_units import parse_pixel_value
from robench.registry import Registry


class PerturbationParams(BaseModel):
    """Parameters common to every perturbation; subclasses add their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class BoundedParams(PerturbationParams):
    """Parameters of an L-infinity attack with budget `eps` in pixel units."""

    eps: float  # L-inf radius in pixel units ([0, 1] scale); suites may write "1/255"

    @field_validator("eps", mode="before")
    @classmethod
    def _parse_eps(cls, value: Any) -> float:
        eps = parse_pixel_value(value, "eps")
        if not 0 <= eps <= 1:
            raise ValueError(f"eps must lie in [0, 1] (pixel units), got {eps}")
        return eps


class Perturbation(abc.ABC):
    """Base class; subclasses set `Params` and implement `perturb`."""

    Params: ClassVar[type[PerturbationParams]] = PerturbationParams
    # Libraries whose versions a report records when this perturbation runs.
    libraries: ClassVar[tuple[str, ...]] = ()

    def __init__(self, params: PerturbationParams) -> None:
        self.params = params

    @property
    def eps(self) -> float | None:
        """The L-inf budget the runner enforces, or None when the perturbation is unbounded."""
        return getattr(self.params, "eps", None)

    @abc.abstractmethod
    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        """Return perturbed images in [0, 1]; use only `seed` (or torch's RNG seeded by the
        runner) for randomness so that the same seed gives the same images."""


PERTURBATIONS: Registry[type[Perturbation]] = Registry("perturbation")


def build_perturbation(kind: str, params: dict[str, Any]) -> Perturbation:
    """Validate `params` against the kind's schema and build the perturbation."""
    cls = PERTURBATIONS.get(kind)
    return cls(cls.Params.model_validate(params))
