"""Expectation over transformation (EOT) for PGD on a randomized model (Athalye, Carlini &
Wagner, ICML 2018, https://arxiv.org/abs/1802.00420): g_t = (1/k) sum_j grad_x CE(f_j(x_t), y)
over `eot_iter` passes (docs/formats.md, "Expectation over transformation"). L2 has no EOT form
in torchattacks: `EOTPGDL2` is its `PGDL2` with that mean in place of the single gradient, and
with `eot_iter = 1` it is `PGDL2` bit for bit (tests/test_eot.py).
"""

from __future__ import annotations

from typing import Any

import torch
import torchattacks
from torch import nn

from robench.perturbations.adversarial.dense_pgd import l2_start


class EOTPGDL2(torchattacks.PGDL2):  # type: ignore[misc]
    """torchattacks `PGDL2` stepping along the gradient averaged over `eot_iter` passes."""

    def __init__(self, model: nn.Module, *args: Any, eot_iter: int = 2, **kwargs: Any) -> None:
        super().__init__(model, *args, **kwargs)
        self.attack = "EOTPGDL2"
        self.eot_iter = eot_iter

    def _mean_gradient(self, adv_images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        loss = nn.CrossEntropyLoss()
        grad = torch.zeros_like(adv_images)
        for _ in range(self.eot_iter):
            cost = loss(self.get_logits(adv_images), labels)
            if self.targeted:
                cost = -cost
            grad += torch.autograd.grad(cost, adv_images, retain_graph=False, create_graph=False)[0]
        return grad / self.eot_iter

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """torchattacks `PGDL2.forward` (3.5.1) with `_mean_gradient` as its gradient."""
        images = images.clone().detach().to(self.device)
        labels = labels.clone().detach().to(self.device)
        if self.targeted:
            labels = self.get_target_label(images, labels)
        adv_images = images.clone().detach()
        batch_size = len(images)
        if self.random_start:  # the same draws and operations as PGDL2's
            adv_images = l2_start(adv_images, self.eps).detach()
        for _ in range(self.steps):
            adv_images.requires_grad = True
            grad = self._mean_gradient(adv_images, labels)
            grad_norms = torch.norm(grad.view(batch_size, -1), p=2, dim=1) + self.eps_for_division
            grad = grad / grad_norms.view(batch_size, 1, 1, 1)
            adv_images = adv_images.detach() + self.alpha * grad
            delta = adv_images - images
            delta_norms = torch.norm(delta.view(batch_size, -1), p=2, dim=1)
            factor = torch.min(self.eps / delta_norms, torch.ones_like(delta_norms))
            delta = delta * factor.view(-1, 1, 1, 1)
            adv_images = torch.clamp(images + delta, min=0, max=1).detach()
        return adv_images
