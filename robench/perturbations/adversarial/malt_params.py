"""MALT's parameters and its registered kind, validated without torch or pyautoattack
(docs/malt.md); the defaults are the public code's (`MALTAttack(k=9, testk=100)`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import PositiveInt, model_validator

from robench.perturbations.base import FORWARD_PASS, GRADIENT_PASS, BoundedParams, register_kind

_DEFAULT_ITERATIONS = 100  # APGD-T's, as in AutoAttack


@register_kind("malt", "robench.perturbations.adversarial.malt:MALT")
class MALTParams(BoundedParams):
    """MALT: targets ranked by mesoscopic almost linearity, each attacked with APGD-T."""

    # Threat model: L-inf (the score divides by the gradient's L1 norm, the dual) or L2.
    norm: Literal["linf", "l2"] = "linf"
    n_target_classes: PositiveInt = 9  # targets attacked per sample (MALT's k), best first
    # Classes scored per sample (MALT's testk, capped to classes - 1): a gradient each.
    candidates: PositiveInt = 100
    # "malt" (the paper's score), or "logits" (pyautoattack's APGD-T, for comparison).
    ranking: Literal["malt", "logits"] = "malt"
    n_iter: PositiveInt = _DEFAULT_ITERATIONS  # APGD-T iterations per target
    n_restarts: PositiveInt = 1  # APGD-T restarts per target

    @classmethod
    def display_name(cls, kind: str, params: Mapping[str, Any]) -> str:
        return "APGD-T (logit targets)" if params.get("ranking") == "logits" else "MALT"

    @model_validator(mode="after")
    def _targets_among_candidates(self) -> MALTParams:
        if self.ranking == "malt" and self.n_target_classes > self.candidates:
            raise ValueError(
                f"n_target_classes {self.n_target_classes} exceeds candidates "
                f"{self.candidates}: MALT attacks targets among the classes it scores; raise "
                "candidates or lower n_target_classes."
            )
        return self

    def targets(self, classes: int) -> int:
        """Targets attacked per sample with `classes` outputs."""
        return max(min(self.n_target_classes, classes - 1), 1)

    def scored(self, classes: int) -> int:
        """Classes MALT scores per sample with `classes` outputs (none for logit ranking)."""
        return 0 if self.ranking == "logits" else max(min(self.candidates, classes - 1), 1)

    def passes_per_sample(self, classes: int = 10) -> int:
        # Ranking, APGD-T for a sample no target breaks, the runner's re-run (docs/malt.md).
        if self.eps == 0:
            return FORWARD_PASS
        ranking = FORWARD_PASS + GRADIENT_PASS * self.scored(classes)
        apgd_t = self.targets(classes) * self.n_restarts * (self.n_iter + 1) * GRADIENT_PASS
        return ranking + apgd_t + FORWARD_PASS
