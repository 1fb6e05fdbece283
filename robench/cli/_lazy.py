"""Commands that are imported only when they run: the root group of `robench`, which knows
each command by name, module and summary and draws its own help (why: docs/architecture.md,
"A command line that answers at once").
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar

from typer._click import Command, Context, HelpFormatter
from typer.core import TyperGroup

from robench._core.lazy import import_object


@dataclass(frozen=True)
class LazyCommand:
    """A subcommand as the root group lists it, before its module is imported."""

    module: str  # e.g. "robench.cli.eval"
    function: str  # the Typer command function in it, e.g. "eval_command"
    summary: str  # the first paragraph of the function's docstring (a test keeps them equal)


def reflowed_help(doc: str | None) -> str:
    """A command's docstring with each prose paragraph on one line, for the terminal to wrap
    (Typer keeps the source's breaks at 100 columns, so at 80 sentences broke twice); an
    "Examples:" paragraph keeps one command per line."""
    paragraphs = inspect.cleandoc(doc or "").split("\n\n")
    return "\n\n".join(
        p if p.startswith("Examples:") else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


def load_command(name: str, spec: LazyCommand, group: TyperGroup) -> Command:
    """Import the command's module and build its click command as Typer would."""
    from typer.main import get_command_from_info
    from typer.models import CommandInfo

    function = import_object(f"{spec.module}:{spec.function}")
    info = CommandInfo(name=name, help=reflowed_help(function.__doc__), callback=function)
    return get_command_from_info(
        info, pretty_exceptions_short=True, rich_markup_mode=group.rich_markup_mode
    )


class LazyCommands(MutableMapping[str, Command]):
    """`TyperGroup.commands` built on first access; the keys (read by `list_commands` and typo
    suggestions) come from the table without any import."""

    def __init__(self, table: dict[str, LazyCommand], group: TyperGroup) -> None:
        self._table = table
        self._group = group
        self._built: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            if name not in self._table:
                raise KeyError(name)
            self._built[name] = load_command(name, self._table[name], self._group)
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        self._built.pop(name, None)
        self._table = {k: v for k, v in self._table.items() if k != name}

    def __iter__(self) -> Iterator[str]:
        yield from self._table
        yield from (name for name in self._built if name not in self._table)

    def __len__(self) -> int:
        return len(set(self._table) | set(self._built))

    def summary(self, name: str) -> str:
        if name in self._table:
            return self._table[name].summary
        return self._built[name].get_short_help_str(limit=200)


class LazyGroup(TyperGroup):
    """A Typer group whose subcommands come from a `LazyCommand` table (`COMMANDS`)."""

    commands_table: ClassVar[dict[str, LazyCommand]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        given = dict(self.commands)
        self.commands = LazyCommands(self.commands_table, self)
        self.commands.update(given)

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        from robench.cli._root_help import print_group_help

        assert isinstance(self.commands, LazyCommands)
        rows = [(name, self.commands.summary(name)) for name in self.commands]
        print_group_help(self, ctx, rows)
