"""Options that cannot apply are refused, not ignored: one rule, read from the option table
(`EvalOption.applies_to`). Given where it cannot apply (e.g. `--surrogate` on a suite without
an attack a surrogate can craft), the run is refused before any model loads, in one sentence
naming the option and what it needs (docs/architecture.md, "`evaluate`").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from robench._core.errors import ConfigError
from robench.evaluation.options import EVAL_OPTIONS
from robench.evaluation.options.eval_option import (
    DATA_OPTIONS,
    OVERRIDES,
    REQUEST,
    SPEED_OPTIONS,
    EvalOption,
)

if TYPE_CHECKING:
    from robench.evaluation.suites import LoadedSuite, PlannedPerturbation


class OptionValues(Protocol):
    """What the rule reads of a request (an `EvalRequest` is one): where each option lands.
    Declared here, not imported, so that no import circle runs through `request.py`."""

    overrides: Any
    data_options: dict[str, Any]
    speed: Any


@dataclass(frozen=True)
class KindRule:
    """A kind of suite entry an option may need: its description and its test."""

    description: str
    test: Callable[[PlannedPerturbation], bool]


def _transferable(planned: PlannedPerturbation) -> bool:
    # Not certification: crafted on a surrogate, a certificate came back as top-1 only.
    perturbation = planned.perturbation
    return perturbation.uses_model and not perturbation.identity and perturbation.transferable


KIND_RULES: dict[str, KindRule] = {
    "transferable": KindRule(
        "attacks whose images can be crafted on another model (not clean, corruptions, "
        "text edits or certification, whose outcome is the evaluated model's own)",
        _transferable,
    ),
}


def applies_to_entry(option: str, planned: PlannedPerturbation) -> bool:
    """Whether option `option` applies to suite entry `planned` (its `applies_to` kinds)."""
    rule = EVAL_OPTIONS[option].applies_to
    return rule is None or not rule.kinds or KIND_RULES[rule.kinds].test(planned)


def _value(request: OptionValues, option: EvalOption) -> Any:
    """The request's value of `option`, wherever it lands."""
    where: dict[str, Callable[[], Any]] = {
        REQUEST: lambda: getattr(request, option.name, None),
        OVERRIDES: lambda: getattr(request.overrides, option.name, None),
        DATA_OPTIONS: lambda: request.data_options.get(option.name),
        SPEED_OPTIONS: lambda: getattr(request.speed, option.name, None),
    }
    return where[option.into]() if option.into in where else None


def check_applicable(request: OptionValues, loaded_suite: LoadedSuite) -> None:
    """Refuse an option given for a suite it cannot apply to (its task, or no entry of the
    kinds it needs)."""
    suite = loaded_suite.suite
    for option in EVAL_OPTIONS.values():
        rule = option.applies_to
        value = _value(request, option)
        if rule is None or value is None or value == option.default:
            continue
        flag = option.flags[0] if option.flags else option.name
        if rule.tasks and suite.task not in rule.tasks:
            raise ConfigError(
                f"{flag} applies to {', '.join(rule.tasks)} suites, and suite {suite.name!r} is "
                f"{suite.task}; drop {flag} (Python: {option.name}=)."
            )
        if rule.kinds and not any(applies_to_entry(option.name, p) for p in loaded_suite.plan):
            raise ConfigError(
                f"{flag} applies to {KIND_RULES[rule.kinds].description}, and suite "
                f"{suite.name!r} has no such entry; drop {flag} (Python: {option.name}=) or "
                "add an attack entry."
            )
