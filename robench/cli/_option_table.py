"""A command's options as one table (`Opt` rows), and the command's typer signature built
from it, every number checked against its flag's range before the command runs
(docs/architecture.md, "A command line that answers at once").
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

import typer

from robench.evaluation.options.eval_option import flags_of
from robench.evaluation.options.ranges import OPTION_RANGES, check_range

F = TypeVar("F", bound=Callable[..., Any])

REQUIRED = inspect.Parameter.empty  # the default of an option (or argument) that must be given


@dataclass(frozen=True)
class Opt:
    """One option of a command. A default of None makes the type optional (`int` -> `int |
    None`): "not given" is None, never a falsy value."""

    name: str  # the command function's keyword
    type: Any  # what typer parses the text as
    default: Any = REQUIRED
    help: str | None = None
    short: str | None = None  # e.g. "-b"
    flag: str | None = None  # default: --NAME with dashes; "--wait/--no-wait" for a pair
    argument: bool = False  # positional, not a flag
    metavar: str | None = None
    panel: str | None = None  # the help panel; None: "Options"
    extra: Mapping[str, Any] = field(default_factory=dict)  # typer's: parser, callback, ...

    @property
    def flags(self) -> tuple[str, ...]:
        return flags_of(self.name, self.flag, self.short, self.argument)

    def parameter(self) -> inspect.Parameter:
        """The row as a parameter of the command's signature, typer's metadata annotated."""
        hint = self.type | None if self.default is None else self.type
        keywords = {"help": self.help, "metavar": self.metavar, **self.extra}
        if self.argument:
            info: Any = typer.Argument(**keywords)
        else:
            info = typer.Option(*self.flags, rich_help_panel=self.panel, **keywords)
        return inspect.Parameter(
            self.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=self.default,
            annotation=Annotated[hint, info],
        )


def with_options(*rows: Opt) -> Callable[[F], F]:
    """Give `command(**given)` the rows as its typer signature (`__signature__` and
    `__annotations__`), its numbers checked against their flags' ranges."""
    parameters = [row.parameter() for row in rows]
    ranged = {row.name: row.flags[0] for row in rows if row.flags and row.flags[0] in OPTION_RANGES}

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def checked(**given: Any) -> Any:
            for name, flag in ranged.items():
                if isinstance(given.get(name), int | float):
                    check_range(flag, given[name])
            return command(**given)

        checked.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
        checked.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
        return checked  # type: ignore[return-value]

    return decorate
