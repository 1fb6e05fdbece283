"""MALT (Melamed, Yehudai and Shamir, NeurIPS 2024, https://arxiv.org/abs/2407.02240): APGD-T
on the targets MALT's mesoscopic almost-linearity score ranks best (`malt_targets`), through
pyautoattack's own `perturb` loop with round i's target taken from the ranking, so `ranking =
"logits"` is exactly its APGD-T (tests/test_malt.py). Where robench differs from MALT's code,
and why: docs/malt.md.
"""

from __future__ import annotations

from typing import Any

import torch

from robench._core.errors import ConfigError
from robench.perturbations.adversarial.malt_params import MALTParams
from robench.perturbations.adversarial.malt_targets import logit_targets, malt_targets
from robench.perturbations.base import Perturbation
from robench.perturbations.checks import isolated_attack, project_onto_ball
from robench.perturbations.threat_models import NORMS

_MIN_CLASSES = 4  # the targeted DLR loss reads the 4th-largest logit


def _attack_targets(
    attack: Any, x: torch.Tensor, y: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """pyautoattack's `APGDAttack_targeted.perturb` loop on `x` (all correctly classified),
    round i aiming every still-robust sample at its `targets[:, i]`."""
    attack.init_hyperparam(x)
    adv = x.clone()
    robust = torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
    seed = attack.seed
    torch.random.manual_seed(seed)  # where the library seeds, before its first target
    torch.cuda.random.manual_seed(seed)
    for i in range(targets.shape[1]):
        for _ in range(attack.n_restarts):
            left = robust.nonzero().flatten()
            if left.numel() == 0:
                continue
            attack.y_target = targets[left, i]
            _, acc, _, found = attack.attack_single_run(x[left].clone(), y[left].clone())
            broken = (acc == 0).nonzero().flatten()
            robust[left[broken]] = False
            adv[left[broken]] = found[broken].clone()
    return adv


class MALT(Perturbation):
    """MALT-ranked APGD-T: per sample, the first target's misclassified image, or the clean."""

    Params = MALTParams
    params: MALTParams

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        p = self.params
        images, labels = images.detach(), labels.detach()
        if images.shape[0] == 0 or p.eps == 0:
            return images.clone()
        from pyautoattack.autopgd_base import APGDAttack_targeted

        with isolated_attack(model, seed, images.device):
            with torch.no_grad():
                logits = model(images)
            classes = int(logits.shape[-1])
            if classes < _MIN_CLASSES:
                raise ConfigError(
                    f"MALT runs APGD-T, whose targeted DLR loss needs at least {_MIN_CLASSES} "
                    f'classes, but the model has {classes}; use kind = "pgd" or an AutoAttack '
                    'entry with attacks = ["apgd-ce", "square"].'
                )
            correct = (logits.argmax(dim=1) == labels).nonzero().flatten()
            adv = images.clone()
            if correct.numel() == 0:
                return adv
            x, y, z = images[correct], labels[correct], logits[correct]
            k = p.targets(classes)
            if p.ranking == "malt":
                targets = malt_targets(model, x, y, z, norm=p.norm, testk=p.candidates, k=k)
            else:
                targets = logit_targets(z, k)
            attack = APGDAttack_targeted(
                model,
                n_restarts=p.n_restarts,
                n_iter=p.n_iter,
                verbose=False,
                eps=p.eps,
                norm=NORMS[p.norm].name,  # "Linf", "L2"
                eot_iter=1,
                rho=0.75,
                seed=seed,
                device=images.device,
                n_target_classes=k,
            )
            adv[correct] = _attack_targets(attack, x, y, targets)
        return project_onto_ball(adv, images, p.eps, name="malt", threat=self.threat_model)
