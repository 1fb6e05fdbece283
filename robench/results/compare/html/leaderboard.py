"""A `Comparison` as the page's leaderboard: header and cells ready for the template.

The numbers, marks and directions are the comparison's own: a cell shows its value with two
decimals and sorts on it as `--format json` rounds it (six decimals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from robench.results.compare.comparison import ARROWS, Column, Comparison
from robench.results.compare.cost_column import UNKNOWN

_LAST = 1e300  # the sort key of an unknown value: after every number, as the page's JS reads it

DIRECTION_WORDS = {True: "higher is better", False: "lower is better"}
# The first click on a column header puts the best value on top.
FIRST_SORT = {True: "descending", False: "ascending"}


@dataclass(frozen=True)
class HeaderCell:
    sort_id: str  # `#sort=<sort_id>` clicks it; the column's id in `--format json`
    group: str  # perturbation, or `aggregates`
    metric: str  # metric label with unit and sample count, e.g. "top-1 (%)"
    arrow: str  # ↑ or ↓
    direction: str  # "higher is better" / "lower is better"
    first_sort: str  # aria-sort after the first click


@dataclass(frozen=True)
class ValueCell:
    text: str  # value with two decimals
    sort_key: float  # the value as `--format json` rounds it
    mark: str  # "best", "second" or ""
    ci: str  # "[53.66, 55.61]"
    hover: str  # title attribute: the interval in words
    diff: str | None  # "(+2.03)" against the reference row


@dataclass(frozen=True)
class LeaderRow:
    label: str
    reference: bool
    cells: list[ValueCell]


@dataclass(frozen=True)
class Leaderboard:
    caption: str
    columns: list[HeaderCell]
    rows: list[LeaderRow]
    notes: list[str]
    has_reference: bool


def _header(column: Column) -> HeaderCell:
    return HeaderCell(
        sort_id=column.id,
        group=column.perturbation if column.aggregate else column.group,
        metric=column.metric_text(),
        arrow=ARROWS[column.higher_is_better],
        direction=DIRECTION_WORDS[column.higher_is_better],
        first_sort=FIRST_SORT[column.higher_is_better],
    )


def _value(cmp: Comparison, row: str, column: Column) -> ValueCell:
    cell = cmp.cell(row, column)
    if math.isnan(cell.value):  # a cost an older report did not count
        return ValueCell(UNKNOWN, _LAST, "", "", "not counted (an older report)", None)
    # One row has no neighbour to beat: nothing is marked best.
    mark = cell.mark if len(cmp.rows) > 1 else ""
    low, high = cell.ci95
    diff = None
    if cell.diff is not None and row != cmp.reference:
        diff = f"({round(cell.diff, 2) + 0.0:+.2f})"  # + 0.0 turns -0.0 into 0.0
    return ValueCell(
        text=f"{cell.value:.2f}",
        sort_key=round(cell.value, 6),
        mark=mark,
        ci=f"[{low:.2f}, {high:.2f}]",
        hover=f"95% interval {low:.2f} to {high:.2f}",
        diff=diff,
    )


def leaderboard(cmp: Comparison) -> Leaderboard:
    """One row per model, one column per compared perturbation x metric or aggregate."""
    rows = [
        LeaderRow(row, row == cmp.reference, [_value(cmp, row, c) for c in cmp.columns])
        for row in cmp.rows
    ]
    return Leaderboard(
        caption=cmp.title,
        columns=[_header(column) for column in cmp.columns],
        rows=rows,
        notes=list(cmp.notes),
        has_reference=cmp.reference is not None,
    )
