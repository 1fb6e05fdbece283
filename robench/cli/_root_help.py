"""`robench --help`: usage, description, options and commands in the panels typer draws, a
table each: typer's own renderer imports rich.markdown, rich.traceback and attrs, a third of
the start-up time of `robench --help`. Subcommands keep typer's renderer."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer._click import Context
from typer.core import TyperGroup, TyperOption


def _panel(title: str, rows: list[tuple[str, ...]]) -> Panel:
    table = Table.grid(padding=(0, 2), expand=False)
    for index in range(len(rows[0])):
        # The last column (help) wraps; names never do.
        table.add_column(no_wrap=index < len(rows[0]) - 1, style="bold cyan" if index == 0 else "")
    for row in rows:
        table.add_row(*row)
    return Panel(table, title=title, title_align="left", border_style="dim", box=box.ROUNDED)


def _option_rows(group: TyperGroup, ctx: Context) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for param in group.get_params(ctx):
        if not isinstance(param, TyperOption) or param.hidden:
            continue
        names = [*param.opts, *param.secondary_opts]
        long = ", ".join(n for n in names if n.startswith("--"))
        short = ", ".join(n for n in names if not n.startswith("--"))
        rows.append((long, short, param.help or ""))
    return rows


def print_group_help(group: TyperGroup, ctx: Context, commands: list[tuple[str, str]]) -> None:
    """Print the group's help to stdout (as typer does: rich output, not click's formatter)."""
    console = Console(highlight=False)
    usage = " ".join([ctx.command_path, *group.collect_usage_pieces(ctx)])
    console.print()
    console.print(Padding(Text.assemble(("Usage: ", "yellow"), (usage, "bold")), (0, 1, 1, 1)))
    for paragraph in (group.help or "").split("\n\n"):
        console.print(Padding(Text(" ".join(paragraph.split())), (0, 1, 1, 1)))
    console.print(_panel("Options", _option_rows(group, ctx)))
    if commands:
        console.print(_panel("Commands", [(name, summary) for name, summary in commands]))
