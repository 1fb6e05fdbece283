"""FGM: the fast gradient method under an L2 budget, the L2 sibling of FGSM.

x_adv = clip(x + eps * g / ||g||_2, 0, 1) with g = grad_x CE(model(x), y), per sample, the
norm over the whole (C, H, W) tensor (Goodfellow et al., 2015, in its L2 form, as cleverhans'
`fast_gradient_method(norm=2)`). Clipping only moves a value towards the clean image, so the
result stays in the ball. The loss is summed over the batch, so a sample's step does not
depend on its batch. Deterministic.
"""

from __future__ import annotations

import torch

from robench.perturbations.adversarial.params import FGMParams
from robench.perturbations.base import Perturbation
from robench.perturbations.checks import isolated_attack, project_onto_ball

_MIN_GRAD_NORM = 1e-12


class FGM(Perturbation):
    """One L2-normalised gradient step of length eps on the cross-entropy, clipped to [0, 1]."""

    Params = FGMParams
    params: FGMParams

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        images, labels = images.detach(), labels.detach()
        if images.shape[0] == 0:
            return images.clone()
        with isolated_attack(model, seed, images.device):
            x = images.clone().requires_grad_(True)
            loss = torch.nn.functional.cross_entropy(model(x), labels, reduction="sum")
            (grad,) = torch.autograd.grad(loss, x)
        norms = grad.flatten(1).norm(p=2, dim=1)  # (B,)
        # As cleverhans: a floor on the norm, so a zero gradient gives a zero step, not NaN.
        scale = self.params.eps / norms.clamp_min(_MIN_GRAD_NORM)  # (B,)
        step = grad * scale.view(-1, *[1] * (grad.dim() - 1))  # (B, C, H, W)
        adv = (images + step).clamp(0.0, 1.0)
        return project_onto_ball(adv, images, self.params.eps, name="FGM", threat=self.threat_model)
