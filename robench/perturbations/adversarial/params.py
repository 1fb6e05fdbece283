"""Parameters of the adversarial attacks and the kinds they register, validated without torch
or any attack library (`robench validate` and `robench list` need only these). The one-step
attacks are two kinds, `fgsm` (L-inf) and `fgm` (L2): docs/formats.md, "Threat models".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import (
    AliasChoices,
    Field,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from robench.perturbations.adversarial import autoattack_cost as cost
from robench.perturbations.base import (
    FORWARD_PASS,
    GRADIENT_PASS,
    BoundedParams,
    optional_step_size,
    positive_pixel_value,
    quarter_eps_step,
    register_kind,
)

_TA = "robench.perturbations.adversarial.torchattacks_attacks"


class _OneStepParams(BoundedParams):
    """A one-step attack: one gradient at the clean image, then the runner's re-run."""

    def passes_per_sample(self, classes: int = 10) -> int:
        return GRADIENT_PASS + FORWARD_PASS


_DENSE_TASKS = ("image-classification", "semantic-segmentation")


@register_kind("fgsm", f"{_TA}:FGSM")
class FGSMParams(_OneStepParams):
    """FGSM, the L-inf one-step attack, takes only the budget `eps`."""

    task: ClassVar[tuple[str, ...]] = _DENSE_TASKS

    _other_norm_hint: ClassVar[str] = '; for the L2 one-step attack use kind = "fgm"'

    norm: Literal["linf"] = "linf"


@register_kind("fgm", "robench.perturbations.adversarial.fgm:FGM")
class FGMParams(_OneStepParams):
    """FGM, the L2 one-step attack (the gradient scaled to L2 norm eps), takes only `eps`."""

    _other_norm_hint: ClassVar[str] = '; for the L-inf one-step attack use kind = "fgsm"'

    norm: Literal["l2"] = "l2"


@register_kind("pgd", f"{_TA}:PGD")
class PGDParams(BoundedParams):
    """Projected gradient descent on the cross-entropy, L-inf or L2 (torchattacks_attacks.PGD);
    on label maps the per-pixel cross-entropy, or SegPGD's weighting (dense_pgd.py)."""

    task: ClassVar[tuple[str, ...]] = _DENSE_TASKS
    # Classification: each sample's first wrong iterate (0 = the start), None if none was.
    columns: ClassVar[tuple[str, ...]] = ("first_success",)

    norm: Literal["linf", "l2"] = "linf"
    steps: PositiveInt = 20  # gradient steps
    step_size: float | None = None  # pixel units ("0.25/255" allowed); None means eps / 4
    random_start: bool = True  # start from a random point of the ball
    # "segpgd" (segmentation only): SegPGD's weighting of correct and wrong pixels (pixel_loss).
    loss: Literal["ce", "segpgd"] = "ce"
    # Each step's gradient averaged over this many passes (EOT, eot.py); None: plain PGD.
    eot_samples: PositiveInt | None = None

    # Left out of a report while None, so reports from before EOT line up in `compare`.
    report_omits_none: ClassVar[tuple[str, ...]] = ("eot_samples",)

    _parse_step_size = field_validator("step_size", mode="before")(optional_step_size)
    resolved_step_size = property(quarter_eps_step)  # the step size used

    @classmethod
    def display_name(cls, kind: str, params: Mapping[str, Any]) -> str:
        name = f"PGD-{params['steps']}" if "steps" in params else "PGD"
        return f"EOT-{name}" if params.get("eot_samples") else name

    def gradient_samples(self) -> int | None:
        return self.eot_samples

    def passes_per_sample(self, classes: int = 10) -> int:
        # A gradient per step and EOT sample; at eps 0 the ball is the image and nothing runs.
        per_step = GRADIENT_PASS * (self.eot_samples or 1)
        return FORWARD_PASS + (0 if self.eps == 0 else per_step * self.steps)


@register_kind("minimal-norm", "robench.perturbations.adversarial.minimal_norm:MinimalNorm")
class MinimalNormParams(BoundedParams):
    """The smallest adversarial perturbation per sample, by FMN or FAB, up to the cap `eps`
    (docs/formats.md, "Minimal-norm attacks")."""

    columns: ClassVar[tuple[str, ...]] = ("min_norm", "first_success")

    method: Literal["fmn", "fab"] = "fmn"  # FMN (robench's own) or FAB (torchattacks)
    norm: Literal["linf", "l2"] = "linf"
    steps: PositiveInt = 100  # gradient steps (FMN), or FAB's iterations
    # FMN's initial step size (pixel units, docs/formats.md); None: 1.0 for L2, 10.0 for L-inf.
    step_size: float | None = None
    gamma: float = Field(default=0.05, gt=0, lt=1)  # FMN's initial radius change per step

    _parse_step_size = field_validator("step_size", mode="before")(optional_step_size)

    @property
    def resolved_step_size(self) -> float:
        """The initial step size used: `step_size`, or 1.0 (L2) / 10.0 (L-inf)."""
        default = {"l2": 1.0, "linf": 10.0}[self.norm]
        return default if self.step_size is None else self.step_size

    @classmethod
    def display_name(cls, kind: str, params: Mapping[str, Any]) -> str:
        method = str(params.get("method", "fmn")).upper()
        return f"{method}-{params['steps']}" if "steps" in params else method

    def passes_per_sample(self, classes: int = 10) -> int:
        # A gradient per step and a final forward; FAB's per-class gradients cost `classes`.
        per_step = GRADIENT_PASS * (classes if self.method == "fab" else 1)
        return 2 * FORWARD_PASS + per_step * self.steps


@register_kind("spsa", f"{_TA}:SPSA")
class SPSAParams(BoundedParams):
    """SPSA with Adam (torchattacks.SPSA; defaults follow advertorch's common usage), L-inf."""

    norm: Literal["linf"] = "linf"

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
        return positive_pixel_value(value, info.field_name or "value")

    def passes_per_sample(self, classes: int = 10) -> int:
        # Two forwards (x +- delta v) per direction and step; no backward. At eps 0 nothing.
        queries = 2 * FORWARD_PASS * self.nb_sample * self.steps
        return FORWARD_PASS + (0 if self.eps == 0 else queries)


AttackName = Literal["apgd-ce", "apgd-dlr", "apgd-t", "fab", "fab-t", "square"]

# Fewest classes an attack's loss is defined for: DLR reads the 3rd-largest logit, the
# targeted DLR the 4th; everything else needs a runner-up class.
_MIN_CLASSES: dict[str, int] = {"apgd-dlr": 3, "apgd-t": 4}


@register_kind("autoattack", "robench.perturbations.adversarial.autoattack:AutoAttack")
class AutoAttackParams(BoundedParams):
    """AutoAttack's version and the few settings worth overriding."""

    # "standard" | "plus" | "rand" | "custom"; defaults to "custom" when `attacks` is given.
    version: Literal["standard", "plus", "rand", "custom"] = "standard"
    attacks: tuple[AttackName, ...] | None = None  # the attacks of version "custom", in order
    norm: Literal["linf", "l2"] = "linf"
    n_queries: PositiveInt = 5000  # Square's query budget
    n_restarts: PositiveInt | None = None  # restarts of every attack (FAB-T always runs 1)
    n_iter: PositiveInt | None = None  # iterations of APGD, APGD-T and FAB (default 100)
    n_target_classes: PositiveInt = 9  # APGD-T / FAB-T targets, capped to classes - 1
    # EOT samples per step of APGD and APGD-T (1; 20 in "rand"); PGD's `eot_samples` too.
    eot_iter: PositiveInt | None = Field(
        default=None, validation_alias=AliasChoices("eot_iter", "eot_samples")
    )

    def gradient_samples(self) -> int | None:
        return self.eot_iter

    @classmethod
    def display_name(cls, kind: str, params: Mapping[str, Any]) -> str:
        """ "AutoAttack", or "AutoAttack (lite)" when a budget is below the standard one."""
        standard = {"n_iter": 100, "n_queries": 5000, "n_target_classes": 9}
        reduced = any((params.get(k) or v) < v for k, v in standard.items())
        return "AutoAttack (lite)" if reduced else "AutoAttack"

    @model_validator(mode="before")
    @classmethod
    def _default_version(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("version") is None:
            version = "standard" if data.get("attacks") is None else "custom"
            return {**data, "version": version}
        return data

    @model_validator(mode="after")
    def _check_attacks(self) -> AutoAttackParams:
        if self.version == "custom" and not self.attacks:
            raise ValueError('version "custom" needs a non-empty `attacks` list, e.g. ["apgd-ce"]')
        if self.version != "custom" and self.attacks is not None:
            raise ValueError(
                f'`attacks` only applies to version "custom"; version {self.version!r} runs a '
                'fixed set. Drop `version` (or set it to "custom") to run your own list.'
            )
        if self.attacks is not None and len(set(self.attacks)) != len(self.attacks):
            raise ValueError(f"`attacks` lists an attack twice: {list(self.attacks)}")
        return self

    def passes_per_sample(self, classes: int = 10) -> int:
        # autoattack_cost.py: the library's checks, robench's probe of the model's outputs, each
        # attack and the prediction after it, then the runner's re-run.
        version = cost.VERSIONS[self.version]
        steps, restarts = self.n_iter or cost.DEFAULT_ITERATIONS, self.n_restarts
        targets = max(min(self.n_target_classes, classes - 1), 1)
        apgd = cost.apgd_passes(
            steps, restarts or version.apgd_restarts, self.eot_iter or version.eot
        )
        passes = {
            "apgd-ce": apgd,
            "apgd-dlr": apgd,
            # The library's `rand` sets APGD's EOT alone.
            "apgd-t": cost.apgd_t_passes(steps, restarts or 1, self.eot_iter or 1, targets),
            "fab": cost.fab_passes(steps, restarts or version.fab_restarts, classes, per_run=3),
            "fab-t": cost.fab_t_passes(steps, 1, targets),
            "square": cost.square_passes(self.n_queries, restarts or 1, before=1),
        }
        attacks = sum(passes[name] + FORWARD_PASS for name in self.attacks or version.attacks)
        return version.checks + FORWARD_PASS + attacks + FORWARD_PASS
