"""Checks that tell when a robustness number cannot be trusted as it stands.

Run once on the first batch before an evaluation: a randomized model (two forward passes
differ) needs expectation over transformation; outputs that already are probabilities break
attacks that expect logits; zero or non-finite input gradients mean gradient-based attacks
see nothing (gradient masking). These mirror AutoAttack's autoattack/checks.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn


@dataclass
class ModelCheckResult:
    randomized: bool
    bad_gradient_share: float  # samples whose input gradient is all zero or not finite
    warnings: list[str] = field(default_factory=list)


def train_mode_warnings(model: nn.Module) -> list[str]:
    """A warning when modules of `model` are in train mode (dropout, batch statistics)."""
    training = [name or "model" for name, m in model.named_modules() if m.training]
    if not training:
        return []
    return [
        f"{len(training)} module(s) were in train mode (e.g. {training[0]}); robench "
        "evaluates in eval mode."
    ]


# The shipped suite that attacks a randomized model with expectation over transformation
# (attacks/eot.toml): what the randomness warnings and the sanity battery tell users to run.
EOT_SUITE = "eot"

# Images the randomness and output-form checks run on: any sample shows randomness, and the
# checks run before every evaluation, so they stay cheap.
_FORWARD_CHECK_SAMPLES = 8


def check_model(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, *, gradients: bool = True
) -> ModelCheckResult:
    """Inspect `model` (expected in eval mode) on one batch of pixel-space images; the input
    gradients only when `gradients` (a suite without gradient attacks does not need them)."""
    warnings = train_mode_warnings(model)
    with torch.inference_mode():
        few = images[:_FORWARD_CHECK_SAMPLES]
        first, second = model(few), model(few)
    randomized = not torch.equal(first, second)
    if randomized:
        warnings.append(
            "the model is randomized (two forward passes on the same input differ): single-"
            "sample attacks overestimate its robustness; attack it with expectation over "
            f"transformation: run `robench eval MODEL -s {EOT_SUITE}` (PGD and APGD averaging "
            "gradients over 20 passes), or give your attacks eot_samples."
        )
    sums = first.sum(dim=-1)
    if (
        first.min() >= 0
        and first.max() <= 1
        and torch.allclose(sums, torch.ones_like(sums), atol=1e-4)
    ):
        warnings.append(
            "the model's outputs look like probabilities (in [0, 1], rows sum to 1); attacks "
            "expect logits, remove the final softmax."
        )
    if not gradients:
        return ModelCheckResult(randomized=randomized, bad_gradient_share=0.0, warnings=warnings)
    x = images.clone().requires_grad_(True)
    with torch.enable_grad():
        loss = nn.functional.cross_entropy(model(x), labels)
        (grad,) = torch.autograd.grad(loss, x, allow_unused=True)
    share = 1.0
    if grad is None:
        warnings.append(
            "the loss has no gradient with respect to the input: gradient attacks are blind."
        )
    else:
        per_sample = grad.flatten(1)
        finite = torch.isfinite(per_sample).all(dim=1)
        zero = (per_sample.abs().amax(dim=1) == 0) & finite
        share = int((~finite).sum() + zero.sum()) / len(per_sample)
        if share:
            warnings.append(
                f"{share:.0%} of samples have zero or non-finite input gradients: gradient-"
                "based attacks cannot move them, so their robustness may be overestimated "
                "(gradient masking); trust black-box results (SPSA, Square) more."
            )
    return ModelCheckResult(randomized=randomized, bad_gradient_share=share, warnings=warnings)
