"""What one evaluation option is: its definition's fields, the panels of `robench eval
--help`, the forms the command line writes values in, and where an option lands in an
`EvalRequest`. The options themselves are in robench/evaluation/options/__init__.py.

Imports no torch and no pydantic: `robench eval --help` is drawn from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, get_args, get_type_hints

# The panels of `robench eval --help`, in the order it shows them.
MODEL, DATA, SUITE, SANITY, OUTPUT, SPEED, PLUGINS = (
    "Model",
    "Data",
    "Suite",
    "Sanity battery",
    "Output",
    "Speed and device",
    "Plugins",
)
PANELS = (MODEL, DATA, SUITE, SANITY, OUTPUT, SPEED, PLUGINS)

# How the command line writes an option's value -> how a sweep plan writes it (the plan's
# kinds: a value, a switch, a repeated flag, a comma-separated list, JSON, or `data`, which
# also takes a table NAME = PATH).
CLI_FORMS: dict[str, str] = {
    "value": "value",  # --limit 64
    "choice": "value",  # --amp bf16: a key of the table `choices` names
    "pixels": "value",  # --sanity-eps 8/255: a number or a fraction
    "count": "value",  # --workers 4, or --workers auto
    "switch": "switch",  # --sanity
    "repeated": "repeated",  # --import a.py --import b
    "floats": "comma",  # --mean 0.485,0.456,0.406
    "size": "comma",  # --input-size 3,224,224
    "json": "json",  # --model-kwargs '{"delta": 1.0}'
    "data": "data",  # --data PATH, or repeated --data NAME=PATH
}

# Where an option lands in an EvalRequest: its own field, or a key of a compound field.
REQUEST, OVERRIDES, DATA_OPTIONS, SPEED_OPTIONS, COMMAND_LINE = (
    "request",  # the EvalRequest field of the same name
    "overrides",  # the ModelSpec field of the same name, over the checkpoint's and card's
    "data_options",  # the task's data option of the same name, over the suite's
    "speed",  # the SpeedOptions field of the same name
    "command line",  # `robench eval` only (how it prints): no EvalRequest field
)
# EvalRequest's compound fields: options fold into them; given whole, they pass through and
# the options given beside them apply over them. `command` is the command line, recorded.
COMPOUND_FIELDS = ("overrides", "data_options", "speed", "command")


def flags_of(name: str, flag: str | None, short: str | None, argument: bool) -> tuple[str, ...]:
    """An option's command-line flags, long first (default: --NAME with dashes); none for a
    positional argument. Every command's options are named so (robench/cli/_option_table.py)."""
    if argument:
        return ()
    long = flag or "--" + name.replace("_", "-")
    return (long, short) if short else (long,)


@dataclass(frozen=True)
class AppliesTo:
    """Where an option means something: suites of `tasks` (empty: any task), with at least
    one entry of `kinds` (a key of robench/evaluation/options/applicability.py's
    `KIND_RULES`; empty: any entry). Given elsewhere it would be ignored, so it is refused
    (`check_applicable`), and the run's code reads the same rule (`applies_to_entry`)."""

    tasks: tuple[str, ...] = ()
    kinds: str = ""


class ModelObject:
    """`torch.nn.Module` in the options' annotations at run time: these modules import no
    torch, and type checkers see the real class (robench/evaluation/options/__init__.py). An
    option whose type holds it also takes, from Python, a model held in memory; the command
    line writes the option's other types (a MODEL string)."""


@dataclass(frozen=True)
class EvalOption:
    """One option of an evaluation; `name` and `type` come from its TypedDict key."""

    default: Any
    panel: str  # one of PANELS
    help: str
    short: str | None = None  # e.g. "-c"
    flag: str | None = None  # default: --NAME with dashes
    metavar: str | None = None
    # A key of CLI_FORMS: how the command line writes the value; default: a switch for a
    # bool, else a value.
    form: str = ""
    choices: str | None = None  # form "choice": "module:attr" of the table of valid values
    into: str = REQUEST  # where request_from_options puts it
    in_plans: bool = True  # False: a sweep sets it itself (from the plan, or per job)
    argument: bool = False  # the command line's positional argument
    # A Python value -> the EvalRequest's (e.g. "r.json" -> Path); None values stay None.
    normalise: Callable[[Any], Any] | None = None
    applies_to: AppliesTo | None = None  # None: every suite
    name: str = field(default="", compare=False)
    type: Any = field(default=None, compare=False)  # the Python type users pass

    @property
    def flags(self) -> tuple[str, ...]:
        return flags_of(self.name, self.flag, self.short, self.argument)

    @property
    def plan_key(self) -> str:
        """The key a sweep plan writes it under: the long flag with underscores."""
        return self.flags[0][2:].replace("-", "_") if self.flags else self.name

    @property
    def plan_kind(self) -> str:
        return CLI_FORMS[self.form]


def options_of(*groups: type) -> dict[str, EvalOption]:
    """The options the keys of TypedDicts `groups` define (`Annotated[type, EvalOption]`)."""
    rows: dict[str, EvalOption] = {}
    for group in groups:
        for name, hint in get_type_hints(group, include_extras=True).items():
            python_type, option = get_args(hint)
            form = option.form or ("switch" if python_type is bool else "value")
            rows[name] = replace(option, name=name, type=python_type, form=form)
    return rows
