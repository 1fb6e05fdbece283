"""AutoAttack (Croce & Hein, 2020, https://arxiv.org/abs/2003.01690), L-inf or L2, through the
official code (`pyautoattack`); the versions: docs/formats.md, "AutoAttack versions".

The library's seed is always robench's (its own `seed=None` would seed every attack from the
clock), and robench changes nothing it returns except samples outside the ball's tolerance: on
one batch, the images and verdicts are the library's own for that seed and batch size.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from robench._core.errors import ConfigError
from robench.perturbations.adversarial.params import _MIN_CLASSES, AutoAttackParams
from robench.perturbations.base import Perturbation
from robench.perturbations.checks import isolated_attack, project_onto_ball
from robench.perturbations.threat_models import NORMS

logger = logging.getLogger(__name__)


def _set_apgd_iterations(apgd: Any, n_iter: int) -> None:
    """An APGD attack's iterations, with the step-size checkpoints its constructor derives
    from them (pyautoattack autopgd_base.APGDAttack.__init__)."""
    apgd.n_iter = n_iter
    apgd.n_iter_orig = n_iter
    apgd.n_iter_2 = max(int(0.22 * n_iter), 1)
    apgd.n_iter_min = max(int(0.06 * n_iter), 1)
    apgd.size_decr = max(int(0.03 * n_iter), 1)


class AutoAttack(Perturbation):
    """Per sample, the first successful adversarial image of the attacks, or the clean one."""

    Params = AutoAttackParams
    params: AutoAttackParams

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        if images.shape[0] == 0:
            return images.detach().clone()
        from pyautoattack import AutoAttack as LibraryAutoAttack

        p = self.params
        images, labels = images.detach(), labels.detach()
        with isolated_attack(model, seed, images.device):
            with torch.no_grad():
                n_classes = int(model(images[:1]).shape[-1])
            # The constructor announces the version at INFO on every batch; its warnings
            # (randomized or dynamic model, probabilities as outputs) still get through.
            library_logger = logging.getLogger("auto-attack")
            level = library_logger.level
            library_logger.setLevel(logging.WARNING)
            try:
                attack = LibraryAutoAttack(
                    model,
                    norm=NORMS[p.norm].name,  # type: ignore[arg-type]  # "Linf", "L2"
                    eps=p.eps,
                    # robench's `custom` runs with `standard`'s settings.
                    version="standard" if p.version == "custom" else p.version,  # type: ignore[arg-type]
                    seed=seed,
                    device=images.device,
                )
            finally:
                library_logger.setLevel(level)
            attack.verbose = False  # no progress messages
            if p.attacks is not None:
                attack.attacks_to_run = list(p.attacks)
                attack.version = "custom"
            self._configure(attack, n_classes)
            adv, _ = attack.run_standard_evaluation(images, labels, batch_size=images.shape[0])
        return project_onto_ball(adv, images, p.eps, name="autoattack", threat=self.threat_model)

    def _configure(self, attack: Any, n_classes: int) -> None:
        """Check the attacks suit `n_classes` and apply the overrides in `params`."""
        p = self.params
        for name in attack.attacks_to_run:
            needed = _MIN_CLASSES.get(name, 2)
            if n_classes < needed:
                raise ConfigError(
                    f"AutoAttack's {name!r} needs at least {needed} classes but the model has "
                    f'{n_classes}; use version = "custom" with attacks that suit it, e.g. '
                    '["apgd-ce", "square"].'
                )
        n_targets = min(p.n_target_classes, n_classes - 1)
        if n_targets < p.n_target_classes:
            logger.info(
                "AutoAttack: %d classes, so APGD-T and FAB-T use %d target classes, not %d.",
                n_classes,
                n_targets,
                p.n_target_classes,
            )
        attack.apgd_targeted.n_target_classes = n_targets
        attack.fab.n_target_classes = n_targets
        attack.square.n_queries = p.n_queries
        if p.n_iter is not None:
            _set_apgd_iterations(attack.apgd, p.n_iter)
            _set_apgd_iterations(attack.apgd_targeted, p.n_iter)
            attack.fab.n_iter = p.n_iter
        if p.n_restarts is not None:
            for component in (attack.apgd, attack.apgd_targeted, attack.fab, attack.square):
                component.n_restarts = p.n_restarts
        if p.eot_iter is not None:
            attack.apgd.eot_iter = p.eot_iter
            attack.apgd_targeted.eot_iter = p.eot_iter
