"""The perturbation contract and the registry every perturbation kind lives in.

A perturbation belongs to a task (`PerturbationParams.task`; None, as for `clean`, is every
task) and perturbs a batch (`Perturbation.perturb`: attacks), one input at a time without the
model (`SamplePerturbation`: corruptions), the evaluated data once (`DatasetPerturbation`: Word
Swap) or each sample of a batch on its own seed (`PerSampleAttack`: text attacks). The runner
checks what comes back and re-runs the model on it. A kind is registered by its parameter
schema and the dotted path of its implementation, so suites validate without torch. The
contract in full: docs/architecture.md, "Perturbation".
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from robench._core.kinds import LazyKind, kind_registrar
from robench._core.registry import Registry
from robench._core.seeding import derive_seed
from robench._core.units import parse_pixel_value
from robench.perturbations.threat_models import NORMS
from robench.results.report.attack_names import ATTACK_NAMES

if TYPE_CHECKING:
    import torch
    from torch import nn

    from robench.perturbations.own_batch import OwnBatch
    from robench.perturbations.threat_models import ThreatModel

# Cost units (docs/cost.md): a forward pass over one sample is 1, with a backward to the input 3.
FORWARD_PASS = 1
GRADIENT_PASS = 3
# One sample's shape where the data is not known (`robench list perturbations`, the sanity
# budget): the shipped Fashion-MNIST models' input; `--dry-run` passes the data's own.
REFERENCE_SHAPE = (1, 28, 28)
# A per-sample attack's own columns, one value per sample: {"queries": [...], ...}.
SampleColumns = dict[str, list[Any]]


def positive_pixel_value(value: Any, what: str) -> float:
    """`parse_pixel_value`, refused unless > 0 (a ValueError, which pydantic reports)."""
    parsed = parse_pixel_value(value, what)
    if not parsed > 0:
        raise ValueError(f"{what} must be > 0 (pixel units), got {parsed:g}")
    return parsed


def optional_step_size(value: Any) -> float | None:
    """A `step_size` parameter: None (the attack's own default) or a positive pixel value."""
    return None if value is None else positive_pixel_value(value, "step_size")


def quarter_eps_step(params: Any) -> float:
    """`params.step_size`, or eps / 4 when not given (PGD's and SmoothAdv's default)."""
    return float(params.eps / 4 if params.step_size is None else params.step_size)


class PerturbationParams(BaseModel):
    """Parameters common to every perturbation; subclasses add their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # No budget at all (corruptions): the report records `threat_model = "unbounded"`.
    unbounded: ClassVar[bool] = False
    # The task or tasks (robench/tasks) whose data it perturbs; None: any (`clean`).
    task: ClassVar[str | tuple[str, ...] | None] = "image-classification"
    # Its name in figures; None: the kind's in capitals ("FGSM"), or see `display_name`.
    display: ClassVar[str | None] = None
    # Per-sample columns of `perturb_with_columns` (docs/formats.md, "Attack columns").
    columns: ClassVar[tuple[str, ...]] = ()
    # Optional extras its implementation imports, with what needs them, checked before a run.
    modules: ClassVar[dict[str, str]] = {}
    # Parameters left out of the report while None: ones added later, so reports still compare.
    report_omits_none: ClassVar[tuple[str, ...]] = ()
    # Metrics only its results can fill (certificates): reported after the task's defaults when
    # a suite names none, so an entry is not scored on top-1 alone without a word.
    metrics: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def display_name(cls, kind: str, params: Mapping[str, Any]) -> str:
        """The name of a result of this kind in figures, from its report parameters."""
        return cls.display or kind.upper()

    @classmethod
    def expand_grid(
        cls, label: str | None, params: dict[str, Any]
    ) -> list[tuple[str | None, dict[str, Any]]]:
        """One suite entry -> the (label, params) of its results: itself, or a grid."""
        return [(label, params)]

    @classmethod
    def threat_summary(cls) -> str | None:
        """The threat model in words ("bounded Linf, L2"); None without an image budget."""
        return "unbounded" if cls.unbounded else None

    def report_fields(self) -> dict[str, Any]:
        """Report fields besides the parameters (a minimal-norm attack's `norm`, `threat_model`)."""
        return {}

    def gradient_samples(self) -> int | None:
        """The EOT samples its attack averages each gradient over, when given, else None."""
        return None

    def passes_per_sample(self, classes: int = 10) -> int:
        """Model passes one sample costs, an upper bound that reads no clock (docs/cost.md); the
        default is the runner's re-run alone. `classes` matters where the cost grows with it."""
        return FORWARD_PASS

    def passes_per_sample_on(self, classes: int, shape: tuple[int, ...] | None) -> int:
        """`passes_per_sample` on samples of `shape` (None: not known), for `--dry-run`."""
        return self.passes_per_sample(classes)

    @classmethod
    def cost_formula(cls) -> str | None:
        """`passes_per_sample` in words; None where the kind's documentation gives it."""
        return None


class BoundedParams(PerturbationParams):
    """Parameters of an attack with budget `eps` (pixel units) in its threat model `norm`, a
    row of `threat_models.NORMS`. A subclass annotates `norm` with a `Literal` of the norms its
    attack implements (a plain `str` means "linf" only), which the validator and the JSON
    schema read; case does not matter ("Linf", "L2"). eps is checked against `max_eps`."""

    # Shown after the list of supported norms when a suite asks for another one.
    _other_norm_hint: ClassVar[str] = ""

    eps: float  # radius in pixel units ([0, 1] scale); suites may write "1/255"
    norm: str = "linf"

    @classmethod
    def _norms(cls) -> tuple[str, ...]:
        return get_args(cls.model_fields["norm"].annotation) or ("linf",)

    @classmethod
    def threat_summary(cls) -> str | None:
        return "bounded " + ", ".join(NORMS[n].name for n in cls._norms())

    @field_validator("norm", mode="before")
    @classmethod
    def _parse_norm(cls, value: Any) -> Any:
        norm = value.strip().lower() if isinstance(value, str) else value
        if norm not in cls._norms():
            shown = ", ".join(repr(n) for n in cls._norms())
            raise ValueError(
                f"norm {value!r} is not supported by this attack; it supports {shown}"
                f"{cls._other_norm_hint}"
            )
        return norm

    @field_validator("eps", mode="before")
    @classmethod
    def _parse_eps(cls, value: Any) -> float:
        eps = parse_pixel_value(value, "eps")
        if eps < 0:
            raise ValueError(f"eps must be >= 0 (pixel units), got {eps}")
        return eps

    @model_validator(mode="after")
    def _eps_fits_the_ball(self) -> BoundedParams:
        threat = NORMS[self.norm]
        if threat.integer_budget and not self.eps.is_integer():
            raise ValueError(
                f"an {threat.name} budget counts changed pixels, so eps must be a whole number, "
                f"got {self.eps:g}; write eps = {max(1, round(self.eps))} or another integer"
            )
        if threat.max_eps is not None and self.eps > threat.max_eps:
            raise ValueError(
                f"eps must lie in [0, {threat.max_eps:g}] (pixel units) for norm "
                f"{self.norm!r}, got {self.eps}"
            )
        return self


class Perturbation(abc.ABC):
    """Base class; subclasses set `Params` and implement `perturb`."""

    Params: ClassVar[type[PerturbationParams]] = PerturbationParams
    # Whether the perturbed inputs depend on the model; those made without it take `--amp`.
    uses_model: ClassVar[bool] = True
    # Returns its inputs unchanged (clean): the runner scores loaded batches directly.
    identity: ClassVar[bool] = False
    # The parameter sizing its model calls (own_batch.py), halved when memory runs out there.
    own_batch: OwnBatch | None = None
    # Its images may be crafted on a `--surrogate`; not when the outcome is the model's own.
    transferable: ClassVar[bool] = True

    def __init__(self, params: PerturbationParams) -> None:
        self.params = params

    @property
    def eps(self) -> float | None:
        """The budget the runner enforces, or None when the perturbation is unbounded."""
        return getattr(self.params, "eps", None)

    @property
    def threat_model(self) -> ThreatModel | None:
        """The ball the runner checks outputs against; None for an unbounded perturbation."""
        if self.eps is None:
            return None
        # Every bounded attack has a validated `norm` (BoundedParams), already lower case.
        return NORMS[getattr(self.params, "norm", "linf")]

    @abc.abstractmethod
    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        """Perturbed images in [0, 1], randomness from `seed` (or torch's RNG it seeds) only."""

    def perturb_with_columns(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> tuple[torch.Tensor, dict[str, list[Any]]]:
        """`perturb`, and its parameters' `columns`, one JSON-able value per sample each
        (`{"min_norm": [...]}`); the default has none."""
        return self.perturb(model, images, labels, seed), {}


class ColumnsPerturbation(Perturbation):
    """An attack whose batch form drops the columns of its `perturb_with_columns`, which it
    overrides (else the two call each other)."""

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        return self.perturb_with_columns(model, images, labels, seed)[0]


class PerSampleAttack(Perturbation):
    """A batch perturbation that attacks every sample on its own seed (a text attack's search),
    with per-sample columns (docs/architecture.md, "Perturbation")."""

    @abc.abstractmethod
    def perturb_samples(
        self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, seeds: Sequence[int]
    ) -> tuple[torch.Tensor, SampleColumns]:
        """(the perturbed batch, per-sample columns); sample i draws from seeds[i] only."""

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        """The batch form, for direct use: sample i is seeded with (seed, i)."""
        seeds = [derive_seed(seed, i) for i in range(len(images))]
        return self.perturb_samples(model, images, labels, seeds)[0]


class SamplePerturbation(Perturbation):
    """A perturbation of one input at a time that never looks at the model (corruptions),
    applied while the data loads, each sample seeded from (run seed, `seed_key`, its index)."""

    uses_model: ClassVar[bool] = False

    @property
    @abc.abstractmethod
    def seed_key(self) -> str:
        """What else a sample's seed is derived from (e.g. "fog-3"), so that equal
        perturbations draw equal noise whatever their label."""

    @abc.abstractmethod
    def perturb_sample(self, item: torch.Tensor, seed: int) -> torch.Tensor:
        """Perturb one input (for images: (C, H, W) in [0, 1]) with randomness from `seed`."""

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        """The batch form, for direct use: image i is seeded with (seed, i)."""
        import torch

        return torch.stack(
            [self.perturb_sample(image, derive_seed(seed, i)) for i, image in enumerate(images)]
        )


class DatasetPerturbation(Perturbation):
    """The evaluated data perturbed as a whole, once per result, from the data and `seed` only
    (docs/architecture.md, "Dataset perturbations")."""

    uses_model: ClassVar[bool] = False

    def check_dataset(self, dataset: Any) -> None:
        """Raise a ConfigError when `dataset` is data this perturbation cannot edit (another
        task's sequences); the runner asks before any job runs. The default accepts any."""

    @abc.abstractmethod
    def perturb_dataset(self, dataset: Any, seed: int) -> Any:
        """The perturbed dataset, `dataset`'s length and item layout; a `perturbation_summary`
        dict on it (the realised swap rate) goes into the result's parameters."""

    def perturb(
        self, model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor, seed: int
    ) -> torch.Tensor:
        raise TypeError(
            f"{type(self).__name__} perturbs a whole dataset (perturb_dataset), not a batch."
        )


PERTURBATIONS: Registry[LazyKind[PerturbationParams]] = Registry("perturbation")
_register_lazy_kind = kind_registrar(PERTURBATIONS)
P = TypeVar("P", bound=type[PerturbationParams])


def register_kind(name: str, implementation: str) -> Callable[[P], P]:
    """`@register_kind("pgd", "module:Class")`: the kind, and its name in `attack_names`."""

    def decorate(params: P) -> P:
        ATTACK_NAMES[name] = functools.partial(params.display_name, name)
        return _register_lazy_kind(name, implementation)(params)

    return decorate


def build_perturbation(kind: str, params: dict[str, Any]) -> Perturbation:
    """Validate `params` against the kind's schema and build the perturbation."""
    entry = PERTURBATIONS.get(kind)
    perturbation: Perturbation = entry.load()(entry.Params.model_validate(params))
    return perturbation
