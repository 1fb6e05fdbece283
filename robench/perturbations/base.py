"""The perturbation contract and the registry every perturbation kind lives in.

A perturbation takes images in pixel space (float in [0, 1], shape (B, C, H, W)), their true
labels and a model whose normalisation is a layer inside it, and returns perturbed images of
the same shape. The runner checks what comes back (its threat model's ball, [0, 1], finite)
and re-runs the model on it; a perturbation never reports accuracy itself.

A kind is registered by its parameter schema (`@register_kind` on a pydantic model) together
with the dotted path of its implementation, so suites validate, and `robench list` shows
parameters, without importing torch or any attack library.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator

from robench._core.kinds import LazyKind, kind_registrar
from robench._core.registry import Registry
from robench._core.units import parse_pixel_value

if TYPE_CHECKING:
    import torch

    from robench.perturbations.threat_models import ThreatModel


class PerturbationParams(BaseModel):
    """Parameters common to every perturbation; subclasses add their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class BoundedParams(PerturbationParams):
    """Parameters of an attack with budget `eps` (pixel units) in its threat model."""

    eps: float  # radius in pixel units ([0, 1] scale); suites may write "1/255"

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

    def __init__(self, params: PerturbationParams) -> None:
        self.params = params

    @property
    def eps(self) -> float | None:
        """The budget the runner enforces, or None when the perturbation is unbounded."""
        return getattr(self.params, "eps", None)

    @property
    def threat_model(self) -> ThreatModel | None:
        """The ball the runner checks outputs against; None for an unbounded perturbation."""
        from robench.perturbations.threat_models import NORMS

        if self.eps is None:
            return None
        # A `norm` parameter names the ball ("Linf"); attacks without one are L-infinity.
        norm = str(getattr(self.params, "norm", "linf")).lower()
        return NORMS[norm]

    @abc.abstractmethod
    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        """Return perturbed images in [0, 1]; use only `seed` (or torch's RNG seeded by the
        runner) for randomness so that the same seed gives the same images."""


PERTURBATIONS: Registry[LazyKind[PerturbationParams]] = Registry("perturbation")
register_kind = kind_registrar(PERTURBATIONS)


def build_perturbation(kind: str, params: dict[str, Any]) -> Perturbation:
    """Validate `params` against the kind's schema and build the perturbation."""
    entry = PERTURBATIONS.get(kind)
    perturbation: Perturbation = entry.load()(entry.Params.model_validate(params))
    return perturbation
