"""The gate's table at the reader's width, as `robench compare` prints its own: `RichGate` on
a terminal, `markdown_fitting` on a pipe (the layouts: docs/ci.md, "Refusals and exit codes").
No torch.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.table import Table

from robench.results.gate.formats import HEADER, STATUS_STYLE, check_row, markdown_table
from robench.results.gate.regression import Check, GateResult, Status
from robench.results.report.fitting import Layout, first_that_fits

Cells = dict[str, str]  # HEADER -> the text of one check's cell


def _p(cells: Cells) -> str:
    """`0.012 (adj. 0.05)`: the p-value and the adjusted one alpha decided on."""
    adjusted = f" (adj. {cells['Adjusted p']})" if cells["Adjusted p"] else ""
    return f"{cells['p']}{adjusted}" if cells["p"] else "untested"


def _allowed(cells: Cells) -> str:
    return f"allowed {cells['Allowed drop']}" if cells["Allowed drop"] != "ignored" else "ignored"


def _width(header: str, lines: list[str]) -> int:
    """The widest line of a column's header and cells (plain text)."""
    return max(cell_len(line) for text in [header, *lines] for line in text.split("\n"))


# The stacked layout's columns but the last (the status): a field with the one under it, and
# whether they are numbers (right-aligned).
_STACKED = [
    ("Check", "Test", False),
    ("Baseline", "Candidate", True),
    ("Change", "Allowed drop", True),
    ("p", "Adjusted p", True),
]


class RichGate:
    """The gate's checks as a rich table in the first layout that fits the console. Every
    column has a fixed width, so a layout's measured width is the width it prints at."""

    def __init__(self, result: GateResult) -> None:
        self.result = result
        self.cells = [check_row(c) for c in result.checks]
        self.styles = [STATUS_STYLE[check.status] for check in result.checks]
        self.name_width = max((cell_len(c["Check"]) for c in self.cells), default=5)

    def _table(self, columns: list[tuple[str, bool, int]]) -> Table:
        table = Table(title=f"robench gate: {self.result.status.value}", title_justify="left")
        for header, right, width in columns:
            table.add_column(
                header, justify="right" if right else "left", overflow="fold", width=width
            )
        return table

    def _status(self, i: int) -> str:
        return f"[{self.styles[i]}]{escape(self.cells[i]['Status'])}[/]"

    def _build(self, headers: list[tuple[str, bool]], rows: list[list[str]], name: int) -> Table:
        """A table of plain-text `rows` (the status last, styled here); column 0 `name` wide."""
        rest = [_width(h, [row[i] for row in rows]) for i, (h, _) in enumerate(headers) if i]
        widths = [name, *rest]
        table = self._table([(h, right, w) for (h, right), w in zip(headers, widths, strict=True)])
        for i, row in enumerate(rows):
            table.add_row(*(escape(cell) for cell in row[:-1]), self._status(i))
        return table

    def wide(self, spare: int = 0) -> Table:
        headers = [(h, 0 < i < 5 or i in (6, 7)) for i, h in enumerate(HEADER)]
        rows = [[c[h] for h in HEADER] for c in self.cells]
        return self._build(headers, rows, max(self.name_width, len(HEADER[0])))

    def stacked(self, spare: int = 0) -> Table:
        headers = [(f"{top}\n{under}", right) for top, under, right in _STACKED]
        rows = [
            [*(f"{c[top]}\n{c[under]}" for top, under, _ in _STACKED), c["Status"]]
            for c in self.cells
        ]
        return self._build([*headers, ("Status", False)], rows, max(self.name_width, 5) + spare)

    def narrow(self, spare: int = 0) -> Table:
        rows = [
            [
                f"{c['Check']}\n{c['Test']}",
                f"{c['Baseline']} -> {c['Candidate']}\n{c['Change']}, {_allowed(c)}\np {_p(c)}",
                c["Status"],
            ]
            for c in self.cells
        ]
        table = self._table(
            [
                ("Check\nTest", False, max(self.name_width, 5) + spare),
                ("Numbers\nStatus", False, _width("", [row[1] for row in rows])),
            ]
        )
        for i, row in enumerate(rows):
            table.add_row(escape(row[0]), escape(row[1]) + "\n" + self._status(i))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        layouts: dict[str, Layout] = {
            "wide": self.wide,
            "stacked": self.stacked,
            "narrow": self.narrow,
        }
        yield first_that_fits(console, options, layouts)[1]


def _status(check: Check, cells: Cells) -> str:
    """The status, bold unless it passed (as in the wide table)."""
    return cells["Status"] if check.status is Status.passed else f"**{cells['Status']}**"


def _markdown_stacked(result: GateResult) -> str:
    """Five columns: check, baseline -> candidate, change (allowed), p (adjusted), status."""
    lines = [
        "| Check | Baseline -> candidate | Change (allowed drop) | p | Status |",
        "|---|---:|---:|---:|---|",
    ]
    for check in result.checks:
        c = check_row(check)
        cells = [
            c["Check"],
            f"{c['Baseline']} -> {c['Candidate']}",
            f"{c['Change']} ({c['Allowed drop']})",
            _p(c),
            _status(check, c),
        ]
        lines.append("| " + " | ".join(cell.replace("|", r"\|") for cell in cells) + " |")
    return "\n".join(lines)


def _markdown_list(result: GateResult, width: int) -> str:
    """A list item per check, wrapped at `width` between words (a name stays whole)."""
    items = []
    for check in result.checks:
        c = check_row(check)
        lines = [
            f"- `{c['Check']}`: {_status(check, c)}; {c['Baseline']} -> {c['Candidate']} "
            f"({c['Change']}, {_allowed(c)})",
            f"  {c['Test']}: p {_p(c)}",
        ]
        for line in lines:
            items += textwrap.wrap(
                line,
                width,
                subsequent_indent="  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
    return "\n".join(items)


MARKDOWN_LAYOUTS: dict[str, Callable[[GateResult, int], str]] = {
    "wide": lambda result, width: markdown_table(result),
    "stacked": lambda result, width: _markdown_stacked(result),
    "list": _markdown_list,
}


def markdown_fitting(result: GateResult, width: int) -> str:
    """The first of `MARKDOWN_LAYOUTS` whose lines fit `width`, else the list (a pipe, a log)."""
    rendered = ""
    for layout in MARKDOWN_LAYOUTS.values():
        rendered = layout(result, width)
        if max((cell_len(line) for line in rendered.splitlines()), default=0) <= width:
            break
    return rendered
