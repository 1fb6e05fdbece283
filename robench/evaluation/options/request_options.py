"""Keyword options -> an `EvalRequest`: what `robench eval` and the Python API call. A keyword
is an EvalRequest field of the same name or folds into a compound field (`overrides`,
`data_options`, `speed`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from robench._core.errors import ConfigError
from robench._core.registry import did_you_mean
from robench.evaluation.options import EVAL_OPTIONS, KEYWORDS
from robench.evaluation.options.eval_option import (
    COMPOUND_FIELDS,
    DATA_OPTIONS,
    OVERRIDES,
    REQUEST,
    SPEED_OPTIONS,
    EvalOption,
)

if TYPE_CHECKING:
    from robench.evaluation.request import EvalRequest
    from robench.evaluation.speed import SpeedOptions
    from robench.models.spec import ModelSpec

__all__ = ["check_keywords", "request_from_options"]


def check_keywords(
    given: Mapping[str, Any],
    known: Sequence[str] | None = None,
    also_suggest: Sequence[str] = (),
) -> None:
    """Refuse a keyword not in `known` (default: every option and the compound fields),
    naming close matches among `known` and `also_suggest` (a caller's own keywords)."""
    known = [*KEYWORDS, *COMPOUND_FIELDS] if known is None else list(known)
    for name in given:
        if name not in known:
            hint = did_you_mean(name, [*known, *also_suggest], "evaluation option")[:-1]
            raise ConfigError(
                f"{hint} (`robench eval --help` describes each; its flag --x-y is the keyword x_y)."
            )


def _value(option: EvalOption, value: Any) -> Any:
    return option.normalise(value) if option.normalise and value is not None else value


def _folded(into: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The options given for compound field `into`, by name; None means not given."""
    return {
        name: _value(option, given[name])
        for name, option in EVAL_OPTIONS.items()
        if option.into == into and given.get(name) is not None
    }


def _overrides(given: Mapping[str, Any]) -> ModelSpec:
    from robench.models.spec import ModelSpec, spec_from_options

    base = given.get("overrides") or ModelSpec()
    return spec_from_options({**base.model_dump(exclude_unset=True), **_folded(OVERRIDES, given)})


def _speed(given: Mapping[str, Any]) -> SpeedOptions:
    from robench.evaluation.speed import SpeedOptions

    base = given.get("speed") or SpeedOptions()
    return replace(base, **_folded(SPEED_OPTIONS, given))


def request_from_options(**options: Any) -> EvalRequest:
    """An `EvalRequest` from keyword options: any of `EVAL_OPTIONS` but the command line's
    own (`format`), by Python keyword, and EvalRequest's compound fields (`overrides`,
    `data_options`, `speed`, `command`) whole, with the options that fold into them applied
    over them. An option not given takes its default; an unknown keyword is one ConfigError
    sentence with close matches."""
    from robench.evaluation.request import EvalRequest

    check_keywords(options)
    fields = {  # a value of None is "not given": the option's default
        name: _value(option, option.default if options.get(name) is None else options[name])
        for name, option in EVAL_OPTIONS.items()
        if option.into == REQUEST
    }
    fields["overrides"] = _overrides(options)
    fields["data_options"] = {
        **(options.get("data_options") or {}),
        **_folded(DATA_OPTIONS, options),
    }
    fields["speed"] = _speed(options)
    fields["command"] = list(options.get("command") or ())
    return EvalRequest(**fields)
