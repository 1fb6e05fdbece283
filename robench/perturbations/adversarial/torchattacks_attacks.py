"""FGSM, PGD and SPSA run through torchattacks in pixel space (`in_pixel_space`), against the
true labels, with randomness from `seed` only (docs/formats.md, the kinds' table). SPSA runs
Adam on an SPSA estimate of the margin loss's gradient from `nb_sample` random +-1 directions
of size `delta` (Uesato et al., 2018; advertorch's code). Label maps (segmentation) go to
robench's own FGSM and PGD loop (dense_pgd.py).
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import torch

from robench._core.errors import ConfigError
from robench.perturbations.adversarial.dense_pgd import dense_fgsm, dense_pgd
from robench.perturbations.adversarial.first_success import FirstWrong
from robench.perturbations.adversarial.params import FGSMParams, PGDParams, SPSAParams
from robench.perturbations.base import BoundedParams, Perturbation
from robench.perturbations.checks import in_pixel_space, isolated_attack, project_onto_ball


class _TorchattacksPerturbation(Perturbation):
    """One torchattacks attack in pixel space, seeded, then projected onto its ball."""

    params: BoundedParams

    def _dense(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        """The attack on label maps (B, H, W); only FGSM and PGD define one."""
        raise ConfigError(
            f"{type(self).__name__} is defined for classification, not label maps; use fgsm or "
            "pgd in a segmentation suite."
        )

    @abc.abstractmethod
    def _build(self, model: torch.nn.Module) -> Any:
        """Return the configured torchattacks attack (import torchattacks here, not above)."""

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        # A radius-0 ball is the image itself; PGD-L2 would divide 0 by 0 there (NaN).
        if images.shape[0] == 0 or self.params.eps == 0:
            return images.detach().clone()
        if labels.dim() > 1:  # label maps: a dense-prediction model, robench's own loop
            return self._dense(model, images.detach(), labels.detach(), seed)
        with isolated_attack(model, seed, images.device):
            attack = in_pixel_space(self._build(model), images.device)
            adv = attack(images.detach(), labels.detach())
        name, threat = type(self).__name__, self.threat_model
        return project_onto_ball(adv, images.detach(), self.params.eps, name=name, threat=threat)


class FGSM(_TorchattacksPerturbation):
    """FGSM (Goodfellow et al., 2015): x + eps * sign(grad CE(model(x), y)), clipped."""

    Params = FGSMParams
    params: FGSMParams

    def _build(self, model: torch.nn.Module) -> Any:
        import torchattacks

        return torchattacks.FGSM(model, eps=self.params.eps)

    def _dense(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        return dense_fgsm(model, images, labels, eps=self.params.eps, seed=seed)


class PGD(_TorchattacksPerturbation):
    """PGD (Madry et al.): `steps` steps of `step_size`, projected onto the ball; signed steps
    for L-inf (torchattacks `PGD`), L2-normalised ones for L2 (torchattacks `PGDL2`)."""

    Params = PGDParams
    params: PGDParams

    # The torchattacks class of each norm; both take (model, eps, alpha, steps, random_start).
    _LIBRARY_CLASS: ClassVar[dict[str, str]] = {"linf": "PGD", "l2": "PGDL2"}

    def _dense(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        p = self.params
        if p.eot_samples is not None:
            raise ConfigError(
                "pgd eot_samples applies to classification; the label-map PGD of a "
                "segmentation suite has no EOT form, so drop eot_samples from the entry."
            )
        return dense_pgd(
            model,
            images,
            labels,
            eps=p.eps,
            steps=p.steps,
            step_size=p.resolved_step_size,
            random_start=p.random_start,
            norm=p.norm,
            loss=p.loss,
            seed=seed,
        )

    def perturb_with_columns(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> tuple[torch.Tensor, dict[str, list[Any]]]:
        """PGD, with each sample's first wrong iterate (`first_success`, classification)."""
        if labels.dim() > 1 or images.shape[0] == 0 or self.params.eps == 0:
            return self.perturb(model, images, labels, seed), {}
        # Under EOT an iterate is evaluated eot_samples times: it is wrong on any of them.
        recorder = FirstWrong(model, labels.detach(), passes=self.params.eot_samples or 1)
        adv = self.perturb(recorder, images, labels, seed)
        return adv, {"first_success": recorder.column()}

    def _build(self, model: torch.nn.Module) -> Any:
        import torchattacks

        p = self.params
        if p.loss != "ce":
            raise ConfigError(
                f'pgd loss = "{p.loss}" weights pixels of label maps; for classification use '
                'loss = "ce".'
            )
        arguments = dict(
            eps=p.eps, alpha=p.resolved_step_size, steps=p.steps, random_start=p.random_start
        )
        if p.eot_samples is not None:  # expectation over transformation (eot.py)
            from robench.perturbations.adversarial.eot import EOTPGDL2

            eot_class = {"linf": torchattacks.EOTPGD, "l2": EOTPGDL2}[p.norm]
            return eot_class(model, **arguments, eot_iter=p.eot_samples)
        return getattr(torchattacks, self._LIBRARY_CLASS[p.norm])(model, **arguments)


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
