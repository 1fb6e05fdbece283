"""Adversarial training (`robench train --adversarial pgd|trades`) for image classifiers: PGD
(Madry et al., ICLR 2018) and TRADES (Zhang et al., ICML 2019) on examples inside the L-inf
ball of radius `eps` in pixel units (before the model's normalisation, as every robench
attack). The methods, their defaults, seeding and validation (the most robust checkpoint kept:
Rice, Wong and Kolter 2020): docs/adversarial-training.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from robench._core.errors import ConfigError
from robench.perturbations.checks import in_eval_mode


@dataclass(frozen=True)
class AdversarialTraining:
    """What `--adversarial` trains against: the method and its attack's parameters."""

    method: str  # a key of LOSSES
    eps: float  # L-inf radius in pixel units
    steps: int = 10
    step_size: float | None = None  # None: 2.5 * eps / steps (Madry et al.)
    beta: float = 6.0  # TRADES' weight of the KL term (their paper's default)

    @property
    def alpha(self) -> float:
        return self.step_size if self.step_size is not None else 2.5 * self.eps / self.steps

    def check(self) -> None:
        """One sentence for parameters that would train on no attack or on nan (the method is
        checked by `TrainConfig.attack`, before its --eps)."""
        if self.steps < 1:  # first: the default step size divides by it
            raise ConfigError(
                f"--steps must be at least 1, got {self.steps}; pass e.g. --steps 10."
            )
        positive = {"--eps": self.eps, "--step-size": self.alpha, "--beta": self.beta}
        for flag, value in positive.items():
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(
                    f"{flag} must be a positive number, got {value}; pass e.g. "
                    f"{flag} {EXAMPLES[flag]}."
                )

    def metadata(self) -> dict[str, object]:
        """The attack's parameters as a checkpoint records them."""
        recorded: dict[str, object] = {
            "method": self.method,
            "norm": "Linf",
            "eps": self.eps,
            "steps": self.steps,
            "step_size": self.alpha,
            "random_start": START[self.method],
            "validation": "clean and PGD (cross-entropy, random start) top-1 at the same "
            "eps, steps and step size",
        }
        if self.method == "trades":
            recorded["beta"] = self.beta
        return recorded


def refuse_stray_options(
    eps: float | None, steps: int | None, step_size: float | None, beta: float | None
) -> None:
    """One sentence for an attack option given without `--adversarial`: it would be ignored."""
    options = {"--eps": eps, "--steps": steps, "--step-size": step_size, "--beta": beta}
    given = [flag for flag, value in options.items() if value is not None]
    if given:
        raise ConfigError(
            f"{', '.join(given)} set the attack of adversarial training; add --adversarial "
            "pgd (or trades) with --eps, or leave them out."
        )


EXAMPLES = {"--eps": "0.1", "--step-size": "0.025", "--beta": "6"}
START = {"pgd": "uniform in the eps-ball", "trades": "0.001 * N(0, 1)"}


def ascend(
    objective: Callable[[torch.Tensor], torch.Tensor],
    clean: torch.Tensor,
    start: torch.Tensor,
    eps: float,
    steps: int,
    step_size: float,
) -> torch.Tensor:
    """`steps` signed-gradient ascent steps on `objective` from `start`, each projected on the
    L-inf ball of radius `eps` around `clean` and on [0, 1]; the result carries no graph."""
    low, high = (clean - eps).clamp(min=0), (clean + eps).clamp(max=1)
    x = torch.max(torch.min(start.detach(), high), low)
    for _ in range(steps):
        x.requires_grad_(True)
        (grad,) = torch.autograd.grad(objective(x), [x])
        x = torch.max(torch.min(x.detach() + step_size * grad.sign(), high), low)
    return x.detach()


def pgd_examples(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    attack: AdversarialTraining,
    generator: torch.Generator,
) -> torch.Tensor:
    """Madry et al.'s PGD examples: cross-entropy ascent from a uniform start in the ball."""
    noise = torch.rand(images.shape, generator=generator, device=images.device)
    start = images + (2 * noise.to(images.dtype) - 1) * attack.eps
    with in_eval_mode(model):
        return ascend(
            lambda x: F.cross_entropy(model(x), labels, reduction="sum"),
            images,
            start,
            attack.eps,
            attack.steps,
            attack.alpha,
        )


def _kl(adversarial_logits: torch.Tensor, clean_probs: torch.Tensor) -> torch.Tensor:
    """KL(clean || adversarial), summed over the batch (TRADES' `KLDivLoss(size_average=False)`)."""
    return F.kl_div(F.log_softmax(adversarial_logits, -1), clean_probs, reduction="sum")


def trades_examples(
    model: nn.Module, images: torch.Tensor, attack: AdversarialTraining, generator: torch.Generator
) -> torch.Tensor:
    """TRADES' examples: KL ascent from 0.001 N(0, 1) around the images."""
    noise = torch.randn(images.shape, generator=generator, device=images.device)
    with in_eval_mode(model):
        with torch.no_grad():
            clean_probs = F.softmax(model(images), -1)
        return ascend(
            lambda x: _kl(model(x), clean_probs),
            images,
            images + 0.001 * noise.to(images.dtype),
            attack.eps,
            attack.steps,
            attack.alpha,
        )


def _pgd_loss(
    attack: AdversarialTraining,
    attacked: nn.Module,
    trained: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    smoothing: float,
    generator: torch.Generator,
) -> torch.Tensor:
    adversarial = pgd_examples(attacked, images, labels, attack, generator)
    return F.cross_entropy(trained(adversarial), labels, label_smoothing=smoothing)


def _trades_loss(
    attack: AdversarialTraining,
    attacked: nn.Module,
    trained: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    smoothing: float,
    generator: torch.Generator,
) -> torch.Tensor:
    adversarial = trades_examples(attacked, images, attack, generator)
    # One forward over both halves: the clean and adversarial logits of the same weights.
    logits = trained(torch.cat([images, adversarial]))
    clean, attacked_logits = logits[: len(images)], logits[len(images) :]
    natural = F.cross_entropy(clean, labels, label_smoothing=smoothing)
    robust = _kl(attacked_logits, F.softmax(clean, -1)) / len(images)
    return natural + attack.beta * robust


# Method -> its training loss on one batch: (attack, model attacked (the bare model: no
# DistributedDataParallel hooks on the attack's gradients), model trained (DDP-wrapped or the
# same module), images, labels, label smoothing, generator) -> loss.
LOSSES: dict[str, Callable[..., torch.Tensor]] = {"pgd": _pgd_loss, "trades": _trades_loss}


def robust_top1(
    model: nn.Module,
    loader: DataLoader,
    attack: AdversarialTraining,
    seed: int,
    device: torch.device,
) -> float:
    """Top-1 under PGD (cross-entropy, random start) at the training attack's eps, steps and
    step size; the generator restarts from `seed`, so every validation sees the same attack."""
    generator = torch.Generator(device=device).manual_seed(seed)
    correct = total = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        adversarial = pgd_examples(model, images, labels, attack, generator)
        with torch.no_grad():
            correct += int((model(adversarial).argmax(-1) == labels).sum())
        total += len(labels)
    return correct / max(1, total)
