"""Reports as pandas DataFrames, from Python: `robench.reports_frame` and
`robench.samples_frame`.

Each takes reports as paths (read and validated as every command reads them) or as `Report`
objects (`robench.evaluate`'s result); the rows come from `robench.results.report.tidy`
(columns: docs/python-api.md). pandas is imported inside the functions, so `import robench`
and the command line stay free of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from robench._core.errors import ConfigError, RobenchError, as_input_errors
from robench.results.report.schema import Report, read_report
from robench.results.report.tidy import (
    REPORT_COLUMN,
    frame_of_rows,
    report_columns,
    report_rows,
    samples_frame_of,
)

if TYPE_CHECKING:
    import pandas as pd

ReportSource = Report | str | os.PathLike[str]  # a report, or the path of its JSON file


def source_name(source: ReportSource, position: int) -> str:
    """How a report is named in frames and tables: its path as given, or `<report N>` for a
    `Report` object (N counts from 1)."""
    return f"<report {position + 1}>" if isinstance(source, Report) else str(source)


def load_report(source: ReportSource) -> Report:
    """`source` itself, or the report read from its path (a bad file is one ConfigError)."""
    if isinstance(source, Report):
        return source
    if not isinstance(source, str | os.PathLike):
        shown = f"a {type(source).__name__} of {len(source)}" if isinstance(source, list) else ""
        raise ConfigError(
            f"{shown or repr(source)[:60]} ({type(source).__name__}) is not a report; pass one "
            "Report (robench.evaluate's result) or the path of a report JSON file, one per "
            "report (reports_frame, compare and gate take a list of them)."
        )
    return read_report(Path(source))


def report_sources(sources: Any) -> list[ReportSource]:
    """One report or an iterable of them, as a list (a bare number or dict is refused by
    `load_report`, item by item)."""
    if isinstance(sources, Report | str | os.PathLike | Mapping | bytes):
        return [sources]  # type: ignore[list-item]
    return list(sources) if isinstance(sources, Iterable) else [sources]


def load_reports(sources: Iterable[ReportSource] | ReportSource) -> list[tuple[str, Report]]:
    """`(name, report)` pairs, in order, as `compare` and `gate` take them."""
    return [(source_name(s, i), load_report(s)) for i, s in enumerate(report_sources(sources))]


@overload
def reports_frame(
    reports: Iterable[ReportSource] | ReportSource, strict: Literal[True] = True
) -> pd.DataFrame: ...


@overload
def reports_frame(
    reports: Iterable[ReportSource] | ReportSource, strict: Literal[False]
) -> tuple[pd.DataFrame, list[tuple[str, str]]]: ...


@overload
def reports_frame(
    reports: Iterable[ReportSource] | ReportSource, strict: bool
) -> pd.DataFrame | tuple[pd.DataFrame, list[tuple[str, str]]]: ...


@as_input_errors
def reports_frame(
    reports: Iterable[ReportSource] | ReportSource, strict: bool = True
) -> pd.DataFrame | tuple[pd.DataFrame, list[tuple[str, str]]]:
    """Many reports in one tidy frame: column `report`, then `Report.to_pandas()`'s columns
    (docs/python-api.md, "robench.reports_frame"). A report that cannot be read raises its
    one-sentence error (a `RobenchError`), unless `strict=False`: then it is left out and
    `(frame, errors)` is returned, `errors` being `(path, message)` for each file left out."""
    reports = report_sources(reports)
    rows: list[dict[str, Any]] = []
    names: list[str] = []
    errors: list[tuple[str, str]] = []
    for i, source in enumerate(reports):
        name = source_name(source, i)
        try:
            report = load_report(source)
        except RobenchError as exc:
            if strict:
                raise
            errors.append((name, str(exc)))
            continue
        found = report_rows(report)
        rows += found
        names += [name] * len(found)
    frame = frame_of_rows(rows, report_columns(rows))
    frame.insert(0, REPORT_COLUMN, names)
    return frame if strict else (frame, errors)


@as_input_errors
def samples_frame(report: ReportSource) -> pd.DataFrame:
    """Per-sample outcomes, one row per (dataset, result, sample); the columns:
    docs/python-api.md, "robench.samples_frame"."""
    return samples_frame_of(load_report(report))
