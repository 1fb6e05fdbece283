"""The `torchattacks.NAME` kinds: one parameter schema per torchattacks attack class, built
from the class's own `__init__` parameters (read from source, torchattacks_source.py) and its
row of the threat-model catalogue (torchattacks_catalogue.py), without importing torch; what a
suite writes: docs/formats.md, "torchattacks attacks". A loader of the perturbation registry
registers them on its first listing or lookup of a name it lacks, so commands that never ask
for them never read torchattacks' source.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AliasChoices, BeforeValidator, Field, create_model, model_validator

from robench._core.units import parse_pixel_value
from robench.perturbations.adversarial.torchattacks_catalogue import (
    BOUNDS,
    CHOICES,
    FILLED_BY_ROBENCH,
    REAL_VALUED,
    THREATS,
    Bounded,
    MinimalNorm,
    Noise,
    Threat,
    refusal,
)
from robench.perturbations.adversarial.torchattacks_source import (
    LibraryAttack,
    LibraryParameter,
    Unreadable,
    library_attacks,
)
from robench.perturbations.base import (
    PERTURBATIONS,
    REFERENCE_SHAPE,
    BoundedParams,
    PerturbationParams,
    register_kind,
)
from robench.perturbations.threat_models import NORMS

logger = logging.getLogger(__name__)

KIND_PREFIX = "torchattacks."
IMPLEMENTATION = "robench.perturbations.adversarial.torchattacks_adapter:TorchattacksAttack"
# Column of the target class each sample was attacked towards (targeted modes only).
TARGET_COLUMN = "target_class"
# Column of how far outside [0, 1] the library's output was (catalogue ROUNDING_TOLERANCE).
ROUNDING_COLUMN = "rounding_clip"


def _fraction(value: Any) -> Any:
    """ "2/255" -> 0.00784...; other values pass on to the field's own check."""
    return parse_pixel_value(value, "value") if isinstance(value, str) else value


_Real = Annotated[float, BeforeValidator(_fraction)]


class TorchattacksParams(PerturbationParams):
    """Parameters of a torchattacks attack class (a `torchattacks.NAME` kind)."""

    attack: ClassVar[str] = ""  # the torchattacks class name
    threat: ClassVar[Threat] = Noise()
    # The library's parameters this schema exposes (robench's field name -> the library's).
    library_names: ClassVar[dict[str, str]] = {}

    @classmethod
    def display_name(cls, kind: str, params: Mapping[str, Any]) -> str:
        targeted = params.get("targeted")
        return cls.attack + (f" (targeted, {targeted})" if targeted else "")

    @classmethod
    def threat_summary(cls) -> str:
        threat = cls.threat
        if isinstance(threat, Bounded):
            return "bounded " + ", ".join(NORMS[n].name for n in threat.norms)
        if isinstance(threat, MinimalNorm):
            return f"minimal-norm {NORMS[threat.norm].name} (no eps; min_norm per sample)"
        return "unbounded (no eps)"

    def library_kwargs(self) -> dict[str, Any]:
        """What the suite set, under the library's names."""
        given = {name: getattr(self, name) for name in self.model_fields_set}
        return {self.library_names[k]: v for k, v in given.items() if k in self.library_names}

    def passes_per_sample(self, classes: int = 10) -> int:
        return self.passes_per_sample_on(classes, None)

    def passes_per_sample_on(self, classes: int, shape: tuple[int, ...] | None) -> int:
        """The attack's own passes and what runs around it (torchattacks_cost.py)."""
        from robench.perturbations.adversarial import torchattacks_cost as cost

        values = self.model_dump()
        shown = cost.CostInput(values, classes, shape or REFERENCE_SHAPE)
        around = cost.adapter_passes(
            minimal_norm=isinstance(self.threat, MinimalNorm),
            targeted=values.get("targeted") is not None,
            fills_classes="n_classes" in values and values["n_classes"] is None,
        )
        return around + cost.cost_rule(self.attack).passes(shown)

    @classmethod
    def cost_formula(cls) -> str | None:
        from robench.perturbations.adversarial.torchattacks_cost import cost_formula

        return cost_formula(cls.attack, cls.model_fields)

    @model_validator(mode="before")
    @classmethod
    def _no_budget(cls, values: Any) -> Any:
        threat = cls.threat
        if isinstance(values, dict) and "eps" in values and not isinstance(threat, Bounded):
            if isinstance(threat, MinimalNorm):
                raise ValueError(
                    f"{KIND_PREFIX}{cls.attack} is a minimal-norm attack with no budget: it "
                    f"searches for the smallest {NORMS[threat.norm].name} perturbation per "
                    "sample; drop `eps` and read accuracy at any eps from its min_norm column "
                    "(`robench compare --at-eps`)"
                )
            raise ValueError(
                f"{KIND_PREFIX}{cls.attack} has no budget (it is not an attack inside a norm "
                "ball); drop `eps`"
            )
        return values


class TorchattacksBoundedParams(TorchattacksParams, BoundedParams):
    """A bounded torchattacks attack: `eps` in its threat model `norm`."""

    def library_kwargs(self) -> dict[str, Any]:
        kwargs = super().library_kwargs()
        threat = self.threat
        assert isinstance(threat, Bounded)  # set by the factory, not user input
        # The budget and the norm always go to the library, under its names ("Linf", "L2").
        budget: Any = int(self.eps) if NORMS[self.norm].integer_budget else self.eps
        kwargs[threat.budget] = budget
        if "norm" in self.library_names:
            kwargs["norm"] = NORMS[self.norm].name
        return kwargs


class TorchattacksMinimalNormParams(TorchattacksParams):
    """A minimal-norm torchattacks attack: no budget, `min_norm` recorded per sample."""

    columns: ClassVar[tuple[str, ...]] = ("min_norm", ROUNDING_COLUMN)

    def report_fields(self) -> dict[str, Any]:
        assert isinstance(self.threat, MinimalNorm)  # set by the factory
        name = NORMS[self.threat.norm].name
        return {
            "norm": self.threat.norm,
            "threat_model": "minimal-norm",
            "budget_display": f"{name} minimal-norm",
        }


class TorchattacksNoiseParams(TorchattacksParams):
    """A torchattacks perturbation with neither a ball nor a search (VANILA, GN)."""

    unbounded: ClassVar[bool] = True
    columns: ClassVar[tuple[str, ...]] = (ROUNDING_COLUMN,)


class RefusedParams(TorchattacksParams):
    """A torchattacks class that cannot run from a suite entry; validating says why."""

    reason: ClassVar[str] = ""

    @classmethod
    def threat_summary(cls) -> str:
        return f"not available: {cls.reason}"

    @model_validator(mode="before")
    @classmethod
    def _refuse(cls, values: Any) -> Any:
        raise ValueError(f"{KIND_PREFIX}{cls.attack} cannot run as a robench kind: {cls.reason}")


_BASES: dict[type, type[TorchattacksParams]] = {
    Bounded: TorchattacksBoundedParams,
    MinimalNorm: TorchattacksMinimalNormParams,
    Noise: TorchattacksNoiseParams,
}


# The pydantic type of a parameter by its literal default's type (`Unreadable`, None: any).
_TYPES: dict[type, Any] = {bool: bool, int: int, float: _Real, str: str}


def _field_type(parameter: LibraryParameter) -> Any:
    """The pydantic type of a library parameter, from its default."""
    default = parameter.default
    if parameter.name in FILLED_BY_ROBENCH:
        return int | None
    if type(default) is int and parameter.name in REAL_VALUED:
        return _Real
    if isinstance(default, tuple | list):
        numeric = all(isinstance(v, int | float) for v in default)
        return tuple[int | float, ...] if numeric else tuple[Any, ...]
    return _TYPES.get(type(default), int | float | str | bool | None)


def _bounded(attack: str, parameter: LibraryParameter) -> Any:
    """The field's type, with catalogue `BOUNDS` for numbers and `CHOICES` for strings."""
    choices = CHOICES.get((attack, parameter.name))
    if choices is not None:
        return Literal[choices]  # type: ignore[valid-type]
    field_type = _field_type(parameter)
    bound = BOUNDS.get(parameter.name)
    numeric = field_type in (int, _Real)
    if bound is None or not numeric:
        return field_type
    constraints: dict[str, Any] = bound.constraints()
    return Annotated[field_type, Field(**constraints)]


def _budget_fields(attack: LibraryAttack, threat: Bounded) -> dict[str, Any]:
    """`eps` (with the library's budget name as an alias) and `norm`."""
    defaults = {p.name: p.default for p in attack.parameters}
    budget = defaults.get(threat.budget)
    eps_default = float(budget) if isinstance(budget, int | float) else ...
    aliases = AliasChoices("eps", threat.budget) if threat.budget != "eps" else None
    norm_default = str(defaults.get("norm", threat.norms[0])).lower()
    if norm_default not in threat.norms:
        norm_default = threat.norms[0]
    return {
        "eps": (float, Field(default=eps_default, validation_alias=aliases)),
        "norm": (Literal[threat.norms], norm_default),  # type: ignore[valid-type]
    }


def _schema(attack: LibraryAttack, threat: Threat) -> type[TorchattacksParams]:
    fields: dict[str, Any] = {}
    names: dict[str, str] = {}
    budget_names: set[str] = set()
    if isinstance(threat, Bounded):
        fields.update(_budget_fields(attack, threat))
        budget_names = {threat.budget, "norm"}
    for parameter in attack.parameters:
        if parameter.name in budget_names:
            names.setdefault("norm" if parameter.name == "norm" else "eps", parameter.name)
            continue
        if parameter.variadic or isinstance(parameter.default, Unreadable):
            continue  # not writable in a suite: the library's default applies
        default = None if parameter.name in FILLED_BY_ROBENCH else parameter.default
        fields[parameter.name] = (_bounded(attack.name, parameter), default)
        names[parameter.name] = parameter.name
    if attack.targeted and "targeted" not in fields:
        fields["targeted"] = (Literal["random", "least-likely"] | None, None)
    base = _BASES[type(threat)]
    schema: type[TorchattacksParams] = create_model(  # type: ignore[call-overload]
        f"Torchattacks{attack.name}Params", __base__=base, **fields
    )
    schema.attack = attack.name
    schema.threat = threat
    schema.library_names = names
    schema.columns = base.columns + ((TARGET_COLUMN,) if "targeted" in fields else ())
    schema.__doc__ = f"torchattacks.{attack.name}, {schema.threat_summary()}."
    return schema


def _refused_schema(name: str, reason: str) -> type[TorchattacksParams]:
    schema: type[RefusedParams] = create_model(  # type: ignore[call-overload]
        f"Torchattacks{name}Params", __base__=RefusedParams
    )
    schema.attack = name
    schema.reason = reason
    schema.__doc__ = f"torchattacks.{name}, not available: {reason}."
    return schema


def attack_schema(name: str) -> type[TorchattacksParams]:
    """The schema of torchattacks.`name` (a refusing one when it cannot run)."""
    attack = library_attacks().get(name)
    reason = refusal(name, known=attack is not None)
    if attack is not None and reason is None:
        needed = [p.name for p in attack.parameters if p.required and not p.variadic]
        if not attack.takes_model or needed:
            reason = (
                f"it needs {', '.join(repr(n) for n in needed) or 'no model'}, which a suite "
                "entry cannot give"
            )
    if attack is None or reason is not None:
        return _refused_schema(name, reason or "unknown")
    try:
        return _schema(attack, THREATS[name])
    except (TypeError, ValueError, NameError) as exc:  # a parameter pydantic cannot hold
        return _refused_schema(name, f"robench cannot build a schema for its parameters ({exc})")


def register_torchattacks_kinds() -> None:
    """Register `torchattacks.NAME` for every class in torchattacks' `__all__`."""
    try:
        names = list(library_attacks())
    except (OSError, SyntaxError) as exc:
        logger.warning("could not read torchattacks' source (%s); no torchattacks.* kinds", exc)
        return
    for name in names:
        kind = f"{KIND_PREFIX}{name}"
        if kind not in PERTURBATIONS:  # a plugin may have registered it first
            register_kind(kind, IMPLEMENTATION)(attack_schema(name))


PERTURBATIONS.add_loader(register_torchattacks_kinds)
