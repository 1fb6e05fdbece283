"""Every torchattacks attack class as one robench perturbation: the `torchattacks.NAME` kinds.

`TorchattacksAttack` builds torchattacks.NAME with the suite's parameters and runs it in pixel
space on the true labels, numpy's global RNG (OnePixel's and Pixle's) seeded too and restored:
bit for bit torchattacks called directly with that seeding (tests/test_torchattacks_adapter.py).
Its columns (`min_norm`, `rounding_clip`, `target_class`): docs/formats.md, "Attack columns".
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from robench._core.errors import ConfigError, first_line
from robench.perturbations.adversarial.torchattacks_catalogue import (
    LIMITS,
    ROUNDING_TOLERANCE,
    TARGETED_MODES,
    Bounded,
    MinimalNorm,
)
from robench.perturbations.adversarial.torchattacks_params import (
    KIND_PREFIX,
    ROUNDING_COLUMN,
    TARGET_COLUMN,
    TorchattacksParams,
)
from robench.perturbations.base import ColumnsPerturbation
from robench.perturbations.checks import (
    in_pixel_space,
    isolated_attack,
    project_onto_ball,
    scored_prediction,
)
from robench.perturbations.corruptions.reference import seeded_global_rng
from robench.perturbations.threat_models import NORMS


class TargetRecorder:
    """Wraps an attack's target-choosing function and keeps what it chose."""

    def __init__(self, attack: Any) -> None:
        self.choose = attack._target_map_function
        self.chosen: list[torch.Tensor] = []
        attack._target_map_function = self

    def __call__(self, inputs: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        targets: torch.Tensor = self.choose(inputs, labels)
        self.chosen.append(targets.detach())
        return targets

    def column(self, batch: int) -> list[int | None]:
        """Each sample's target. Attacks that choose per sample (Pixle) make one call per
        sample; those that choose again per restart (FAB) leave the last choice."""
        if not self.chosen:
            return [None] * batch
        every = torch.cat([t.reshape(-1) for t in self.chosen])
        return [int(t) for t in every[-batch:].tolist()] if len(every) >= batch else [None] * batch


def build_attack(
    params: TorchattacksParams, model: torch.nn.Module, images: torch.Tensor, seed: int
) -> Any:
    """The configured torchattacks attack, checked against the class's own signature."""
    kind = f"{KIND_PREFIX}{params.attack}"
    import torchattacks

    library = getattr(torchattacks, params.attack)
    signature = inspect.signature(library.__init__)
    kwargs = params.library_kwargs()
    # FILLED_BY_ROBENCH: `seed` and `n_classes` where the attack takes them and the suite did not.
    if "seed" in signature.parameters:
        kwargs.setdefault("seed", seed)
    if "n_classes" in signature.parameters and "n_classes" not in kwargs:
        with torch.no_grad():
            kwargs["n_classes"] = int(model(images[:1]).shape[-1])
    try:
        signature.bind(None, model, **kwargs)
    except TypeError as exc:
        raise ConfigError(
            f"{kind} does not take {sorted(kwargs)} as installed ({exc}); robench read its "
            "parameters from torchattacks' source, which differs from the imported class: "
            "reinstall torchattacks."
        ) from None
    try:
        attack = library(model, **kwargs)
    except (ValueError, TypeError, AssertionError, KeyError) as exc:
        raise ConfigError(
            f"{kind} rejected its parameters {kwargs}: {exc or type(exc).__name__}; fix them "
            f"in the suite (see torchattacks' documentation of {params.attack})."
        ) from None
    return in_pixel_space(attack, images.device)


def run_attack(
    attack: Any, kind: str, name: str, images: torch.Tensor, labels: torch.Tensor
) -> torch.Tensor:
    """`attack(images, labels)`; a failure its parameters cause inside it is one sentence."""
    try:
        adv: torch.Tensor = attack(images, labels)
    except (ZeroDivisionError, IndexError, ValueError, AssertionError) as exc:
        limit = f"; note: {LIMITS[name]}" if name in LIMITS else ""
        raise ConfigError(
            f"{kind} failed inside torchattacks ({type(exc).__name__}: {first_line(exc)}) with "
            f"this model and these parameters{limit}; change the parameters in the suite."
        ) from None
    return adv.detach().to(images.dtype)


def clip_rounding(adv: torch.Tensor) -> tuple[torch.Tensor, list[float]]:
    """`adv` clipped to [0, 1] when outside by at most ROUNDING_TOLERANCE, with how far each
    sample was; beyond that left for the runner's check to refuse."""
    flat = adv.reshape(adv.shape[0], -1)
    excess = torch.maximum(-flat.amin(dim=1), flat.amax(dim=1) - 1).clamp(min=0)  # (B,)
    if not bool(excess.max() <= ROUNDING_TOLERANCE):  # NaN too: not rounding
        return adv, [0.0] * adv.shape[0]
    return adv.clamp(0, 1), excess.double().tolist()


def minimal_norms(
    model: torch.nn.Module,
    clean: torch.Tensor,
    adv: torch.Tensor,
    labels: torch.Tensor,
    norm: str,
) -> list[float | None]:
    """Per sample: 0.0 if clean is wrong, else the `norm` distance to `adv` if it is, else None."""
    with torch.no_grad():
        wrong_clean = (scored_prediction(model(clean)) != labels).tolist()
        wrong_adv = (scored_prediction(model(adv)) != labels).tolist()
    lengths = NORMS[norm].distance((adv - clean).double()).tolist()
    return [
        0.0 if at_clean else (length if at_adv else None)
        for at_clean, at_adv, length in zip(wrong_clean, wrong_adv, lengths, strict=True)
    ]


class TorchattacksAttack(ColumnsPerturbation):
    """One torchattacks attack class (the kind `torchattacks.NAME`), in pixel space."""

    Params = TorchattacksParams
    params: TorchattacksParams

    def perturb_with_columns(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> tuple[torch.Tensor, dict[str, list[Any]]]:
        """The attack's images and per-sample columns (see the module docstring)."""
        p = self.params
        kind = f"{KIND_PREFIX}{p.attack}"
        if labels.dim() > 1:
            raise ConfigError(f"{kind} attacks classifiers, not label maps; use pgd or fgsm.")
        clean, targets = images.detach(), labels.detach()
        if clean.shape[0] == 0 or (self.eps == 0 and isinstance(p.threat, Bounded)):
            # A radius-0 ball is the image itself (PGD-L2 would divide 0 by 0 there).
            return clean.clone(), {}
        columns: dict[str, list[Any]] = {}
        with isolated_attack(model, seed, clean.device), seeded_global_rng(seed % 2**32):
            attack = build_attack(p, model, clean, seed)
            mode = getattr(p, "targeted", None)
            recorder = None
            if mode is not None:
                getattr(attack, TARGETED_MODES[mode])(quiet=True)
                recorder = TargetRecorder(attack)
            adv = run_attack(attack, kind, p.attack, clean, targets)
            if not isinstance(p.threat, Bounded):  # the ball's projection clips the others
                adv, columns[ROUNDING_COLUMN] = clip_rounding(adv)
            if isinstance(p.threat, MinimalNorm):
                columns["min_norm"] = minimal_norms(model, clean, adv, targets, p.threat.norm)
        if recorder is not None:
            columns[TARGET_COLUMN] = recorder.column(clean.shape[0])
        if isinstance(p.threat, Bounded) and self.eps is not None:
            adv = project_onto_ball(adv, clean, self.eps, name=kind, threat=self.threat_model)
        return adv, columns
