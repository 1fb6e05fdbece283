"""FGSM, PGD and SPSA under an L-inf budget, run through torchattacks.

All three take pixel-space images in [0, 1], attack the true labels passed in, and return
images inside the eps-ball around the input, clipped to [0, 1]. torchattacks' own
normalisation handling is switched off (the model normalises inside), the model stays in eval
mode, and randomness (PGD's random start, SPSA's directions) comes only from `seed`.

- `fgsm`: one signed-gradient step of size eps on the cross-entropy (Goodfellow et al., 2015).
- `pgd`: `steps` signed-gradient steps of `step_size` (default eps/4) from a uniform random
  start in the ball, projected after every step (Madry et al., 2018).
- `spsa`: gradient-free; Adam on an SPSA estimate of the margin loss's gradient from
  `nb_sample` random +-1 directions of size `delta` (Uesato et al., 2018; advertorch's code).
"""

from __future__ import annotations

import abc
from typing import Any, Literal

import torch
from pydantic import AliasChoices, Field, PositiveInt, ValidationInfo, field_validator

from robench.perturbations.base import PERTURBATIONS, BoundedParams, Perturbation
from robench.perturbations.checks import isolated_attack, project_linf
from robench.pixel_units import parse_pixel_value


def _positive_pixel_value(value: Any, what: str) -> float:
    parsed = parse_pixel_value(value, what)
    if parsed <= 0:
        raise ValueError(f"{what} must be > 0 (pixel units), got {parsed}")
    return parsed


class _TorchattacksPerturbation(Perturbation):
    """Runs one torchattacks attack in pixel space, seeded, then enforces the eps-ball."""

    libraries = ("torchattacks",)
    params: BoundedParams

    @abc.abstractmethod
    def _build(self, model: torch.nn.Module) -> Any:
        """Return the configured torchattacks attack (import torchattacks here, not above)."""

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        """Attack `images` against the true `labels`; same seed, same images."""
        if images.shape[0] == 0:
            return images.detach().clone()
        with isolated_attack(model, seed, images.device):
            attack = self._build(model)
            # The model normalises inside: torchattacks must not (it would for a MAIR RobModel),
            # and must not switch the model to train mode; it also cannot find the device of a
            # model without parameters, so set it from the images.
            attack._set_normalization_applied(None)
            attack.normalization_used = None
            attack.set_model_training_mode(model_training=False)
            attack.set_device(images.device)
            adv = attack(images.detach(), labels.detach())
        return project_linf(adv, images.detach(), self.params.eps, name=type(self).__name__)


class FGSMParams(BoundedParams):
    """FGSM takes only the budget `eps`."""


@PERTURBATIONS.register("fgsm")
class FGSM(_TorchattacksPerturbation):
    """Fast Gradient Sign Method: x + eps * sign(grad CE(model(x), y)), clipped to [0, 1]."""

    Params = FGSMParams
    params: FGSMParams

    def _build(self, model: torch.nn.Module) -> Any:
        import torchattacks

        return torchattacks.FGSM(model, eps=self.params.eps)


class PGDParams(BoundedParams):
    """Projected gradient descent on the cross-entropy, L-inf."""

    steps: PositiveInt = 20  # gradient steps
    step_size: float | None = None  # pixel units ("0.25/255" allowed); None means eps / 4
    random_start: bool = True  # start from a uniform random point of the ball
    loss: Literal["ce"] = "ce"  # the loss ascended (torchattacks' PGD supports cross-entropy)

    @field_validator("step_size", mode="before")
    @classmethod
    def _parse_step_size(cls, value: Any) -> float | None:
        return None if value is None else _positive_pixel_value(value, "step_size")

    @property
    def resolved_step_size(self) -> float:
        """The step size used: `step_size`, or eps / 4 when not given."""
        return self.eps / 4 if self.step_size is None else self.step_size


@PERTURBATIONS.register("pgd")
class PGD(_TorchattacksPerturbation):
    """PGD (Madry et al.): `steps` signed steps of `step_size`, projected onto the ball."""

    Params = PGDParams
    params: PGDParams

    def _build(self, model: torch.nn.Module) -> Any:
        import torchattacks

        p = self.params
        return torchattacks.PGD(
            model,
            eps=p.eps,
            alpha=p.resolved_step_size,
            steps=p.steps,
            random_start=p.random_start,
        )


class SPSAParams(BoundedParams):
    """SPSA with Adam (torchattacks.SPSA; defaults follow advertorch's common usage)."""

    # Adam iterations; suites may also write advertorch's name `nb_iter`.
    steps: PositiveInt = Field(default=20, validation_alias=AliasChoices("steps", "nb_iter"))
    delta: float = 0.01  # finite-difference step of the gradient estimate, pixel units
    lr: float = 0.01  # Adam learning rate on the perturbation, pixel units per step
    nb_sample: PositiveInt = 128  # random +-1 directions per gradient estimate
    # Directions evaluated at once; one forward pass then holds this x batch-size images.
    max_batch_size: PositiveInt = 64

    @field_validator("delta", "lr", mode="before")
    @classmethod
    def _parse_pixel(cls, value: Any, info: ValidationInfo) -> float:
        return _positive_pixel_value(value, info.field_name or "value")


@PERTURBATIONS.register("spsa")
class SPSA(_TorchattacksPerturbation):
    """SPSA (Uesato et al., 2018): gradient-free, so it sees through masked gradients."""

    Params = SPSAParams
    params: SPSAParams

    def _build(self, model: torch.nn.Module) -> Any:
        import torchattacks

        p = self.params
        return torchattacks.SPSA(
            model,
            eps=p.eps,
            delta=p.delta,
            lr=p.lr,
            nb_iter=p.steps,
            nb_sample=p.nb_sample,
            # More directions per pass than there are samples would only waste memory.
            max_batch_size=min(p.max_batch_size, p.nb_sample),
        )
