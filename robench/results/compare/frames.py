"""`robench.compare`: the table of `robench compare --format csv` as a pandas DataFrame, with
its numbers unrounded and the rest in `frame.attrs` (docs/python-api.md, "robench.compare").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robench._core.errors import ConfigError, as_input_errors
from robench._core.units import parse_pixel_value
from robench.results.compare.comparison import Comparison, build_comparison
from robench.results.compare.formats import cell_numbers
from robench.results.report.frames import (
    ReportSource,
    load_report,
    load_reports,
    report_sources,
    source_name,
)
from robench.results.report.schema import Report

if TYPE_CHECKING:
    import pandas as pd


def _numbers(
    value: Sequence[float | str] | str | None, name: str, what: str, example: str
) -> list[float]:
    """`--at-eps` or `--at-radius` as numbers: `"1/255,2/255"`, `[0.25, "2/255"]` or None."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    numbers = [
        parse_pixel_value(str(item).strip(), name) if isinstance(item, str) else float(item)
        for item in items
        if not isinstance(item, str) or item.strip()
    ]
    if not numbers or any(not n >= 0 for n in numbers):  # `not >=` also refuses NaN
        raise ConfigError(f"{name} {value!r} must list {what} >= 0, e.g. {name}={example}.")
    return numbers


def _metrics(metric: str | Sequence[str] | None) -> list[str] | None:
    """`--metric` as a list: `"top1,top5"`, `["top1"]` or None (every metric)."""
    if metric is None:
        return None
    names = metric.split(",") if isinstance(metric, str) else list(metric)
    found = [name.strip() for name in names if name.strip()]
    if not found:
        raise ConfigError(f"metric {metric!r} names no metric; pass e.g. metric=['top1', 'top5'].")
    return found


def _with_reference(
    loaded: list[tuple[str, Report]],
    sources: list[ReportSource],
    reference: int | ReportSource | None,
) -> tuple[list[tuple[str, Report]], int | None]:
    """As `robench compare --reference`: the reference is one of the reports (by index,
    object or path) or, if not, an extra first row."""
    if reference is None:
        return loaded, None
    if isinstance(reference, int):
        if not 0 <= reference < len(loaded):
            raise ConfigError(
                f"reference {reference} is not an index of the {len(loaded)} reports; pass "
                f"0 to {len(loaded) - 1}, a report or its path."
            )
        return loaded, reference
    for i, source in enumerate(sources):
        if source is reference or (
            not isinstance(source, Report)
            and not isinstance(reference, Report)
            and Path(source).resolve() == Path(reference).resolve()
        ):
            return loaded, i
    name = source_name(reference, len(loaded))
    return [(name, load_report(reference)), *loaded], 0


def comparison_frame(cmp: Comparison, ci: bool) -> pd.DataFrame:
    """The frame of a `Comparison`: the CSV's columns and numbers, unrounded."""
    import pandas as pd

    kinds = cell_numbers(cmp, ci)
    table: dict[str, list[Any]] = {"model": list(cmp.rows)}
    table["report"] = [cmp.sources[row] for row in cmp.rows]
    for suffix, number in kinds.items():
        for column in cmp.columns:
            table[f"{column.id}{suffix}"] = [number(cmp.cell(row, column)) for row in cmp.rows]
    frame = _shown(pd.DataFrame(table))
    frame.attrs = {
        "title": cmp.title,
        "reference": cmp.reference,
        "notes": list(cmp.notes),
        "columns": [{"id": c.id, **c.described()} for c in cmp.columns],
    }
    return frame


def _per_corruption_frame(reports: list[tuple[str, Report]]) -> pd.DataFrame:
    import pandas as pd

    from robench.results.compare.per_corruption import build_per_corruption

    table = build_per_corruption(reports)
    frame = pd.DataFrame(
        {
            "corruption": list(table.corruptions),
            **{m: [table.cells[row, m][0] for row in table.corruptions] for m in table.models},
        }
    )
    frame.attrs = {"notes": list(table.notes), "severities": dict(table.severities)}
    return _shown(frame)


def _shown(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` as a `ComparisonFrame`, which shows all its columns."""
    from robench.results.compare.shown_frame import ComparisonFrame

    return ComparisonFrame(frame)


@as_input_errors
def compare(
    reports: Iterable[ReportSource] | ReportSource,
    *,
    reference: int | ReportSource | None = None,
    metric: str | Sequence[str] | None = None,
    ci: bool = False,
    at_eps: Sequence[float | str] | str | None = None,
    per_corruption: bool = False,
    at_radius: Sequence[float | str] | str | None = None,
    cost: bool = False,
) -> pd.DataFrame:
    """The table of `robench compare REPORT... --format csv` as a DataFrame: `reports` paths
    or `Report` objects, the options the command line's (docs/python-api.md, "robench.compare").
    """
    sources = report_sources(reports)
    loaded = load_reports(sources)
    if per_corruption:
        return _per_corruption_frame(loaded)
    loaded, index = _with_reference(loaded, sources, reference)
    comparison = build_comparison(
        loaded,
        metrics=_metrics(metric),
        reference=index,
        at_eps=_numbers(at_eps, "at_eps", "budgets", "[1/255, 2/255]"),
        at_radius=_numbers(at_radius, "at_radius", "L2 radii", "[0.25, 0.5]"),
        cost=cost,
    )
    return comparison_frame(comparison, ci)
