"""One report as tidy rows: one row per (dataset, result, metric), and per-sample columns.

These are the rows behind `Report.to_pandas()`, `robench.reports_frame`,
`robench.samples_frame` and the report's HTML table in Jupyter (`Report._repr_html_`). They
are built from the report alone, in plain Python: the direction of a metric is the one the
report stores beside its value (`MetricValue.higher_is_better`), so no metric registry (the
`stats` room, above this one) is needed, and pandas is imported only by the two functions
that return frames.

Why the report is typed `Any` here: `Report.to_pandas` (in `schema.py`) imports this module,
so this module cannot import `schema.py` back, not even for types (an import circle, which
`tests/test_architecture.py` forbids). It reads only the fields documented in docs/formats.md.

The tidy frame's columns (`report_columns`), aggregates' rows included, are documented in
docs/python-api.md ("`report.to_pandas()`"); values are as stored (fractions, not percent).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

# A `robench.results.report.schema.Report` (see the module docstring for why `Any`).
ReportLike = Any

LEADING = ("model", "task", "dataset", "perturbation", "kind")
COST_COLUMNS = ("passes_per_sample", "forward_passes", "backward_passes")
MEASURED = ("metric", "value", "ci_low", "ci_high", "n", "higher_is_better")
TRAILING = (*MEASURED, *COST_COLUMNS, "wall_time_s", "suite", "seed")
AGGREGATE_KIND = "aggregate"  # the `kind` of an aggregate's row
REPORT_COLUMN = "report"  # `robench.reports_frame`'s first column: where a row's report is from
FIXED = (*LEADING, *TRAILING, REPORT_COLUMN)  # no parameter column takes one of these names
PARAM_PREFIX = "param."  # before a parameter key that is also a fixed column's name

# Per-sample frame: the leading columns, then the stored columns in order of first appearance.
SAMPLE_LEADING = (
    "model",
    "dataset",
    "perturbation",
    "kind",
    "index",
    "target",
    "prediction",
    "correct",
)
CORRECT_COLUMN = "top1"  # the per-sample column shown as `correct` (top-1 right or wrong)
_RENAMED = {CORRECT_COLUMN: "correct"}


def _cell(value: Any) -> Any:
    """Lists become tuples: a frame's cells can then be grouped and compared."""
    return tuple(_cell(v) for v in value) if isinstance(value, list) else value


def flat_params(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"eps": 0.03, "realised": {"words": 9}}` -> `{"eps": 0.03, "realised.words": 9}`; a
    key that is a fixed column (`n`, `kind`...) becomes `param.KEY`."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flat_params(value, f"{name}."))
            continue
        clashes = not prefix and name in FIXED
        flat[f"{PARAM_PREFIX}{name}" if clashes else name] = _cell(value)
    return flat


def _common(report: ReportLike) -> tuple[dict[str, Any], dict[str, Any]]:
    """The leading and trailing cells every row of `report` shares."""
    lead = {"model": report.model.name, "task": report.task}
    tail = {"suite": report.suite.name, "seed": report.seed}
    return lead, tail


def _cost(result: Any) -> dict[str, Any]:
    """The result's counted cost and wall time; the cost is missing (None) when not counted."""
    cost = result.cost
    counted = (cost.passes_per_sample, cost.forward, cost.backward) if cost else (None,) * 3
    return {**dict(zip(COST_COLUMNS, counted, strict=True)), "wall_time_s": result.wall_time_s}


def _result_rows(report: ReportLike) -> Iterator[dict[str, Any]]:
    lead, tail = _common(report)
    for result in report.results:
        params = flat_params(result.params)
        cost = _cost(result)
        for metric, measured in result.metrics.items():
            yield {
                **lead,
                "dataset": result.dataset,
                "perturbation": result.name,
                "kind": result.kind,
                **params,
                "metric": metric,
                "value": measured.value,
                "ci_low": measured.ci95[0],
                "ci_high": measured.ci95[1],
                "n": result.n_samples,
                "higher_is_better": measured.higher_is_better,
                **cost,
                **tail,
            }


def _aggregate_samples(report: ReportLike, aggregate: Any) -> int:
    """The samples an aggregate's members share: the fewest any member covers."""
    counts = [r.n_samples for r in report.results if r.name in aggregate.members]
    if counts:
        return min(counts)
    data = report.datasets.get(aggregate.dataset)
    return int(data.n_samples) if data is not None else 0


def _aggregate_rows(report: ReportLike) -> Iterator[dict[str, Any]]:
    lead, tail = _common(report)
    for aggregate in report.aggregates:
        ci95 = aggregate.ci95 or (None, None)
        yield {
            **lead,
            "dataset": aggregate.dataset,
            "perturbation": aggregate.name,
            "kind": AGGREGATE_KIND,
            "metric": aggregate.kind,
            "value": aggregate.value,
            "ci_low": ci95[0],
            "ci_high": ci95[1],
            "n": _aggregate_samples(report, aggregate),
            "higher_is_better": aggregate.higher_is_better,
            **tail,
        }


def report_rows(report: ReportLike) -> list[dict[str, Any]]:
    """Every (dataset, result, metric) of `report`, then every aggregate, as dicts."""
    return [*_result_rows(report), *_aggregate_rows(report)]


def report_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The fixed columns around the parameter columns found in `rows` (first seen first)."""
    params = dict.fromkeys(key for row in rows for key in row if key not in FIXED)
    return [*LEADING, *params, *TRAILING]


def frame_of_rows(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    """A frame of `rows` with exactly `columns`; a cell a row lacks is missing (NaN)."""
    import pandas as pd

    return pd.DataFrame.from_records(rows, columns=columns)


def report_frame(report: ReportLike) -> pd.DataFrame:
    """The tidy frame of one report (`Report.to_pandas()`)."""
    rows = report_rows(report)
    return frame_of_rows(rows, report_columns(rows))


def sample_columns(report: ReportLike) -> dict[str, list[Any]]:
    """`robench.samples_frame`'s columns: `SAMPLE_LEADING` (`correct` is the stored `top1`),
    then every other stored column in order of first appearance; None where a result lacks
    one."""
    kinds = {r.name: r.kind for r in report.results}
    blocks: list[tuple[str, str, Any, dict[str, list[Any]], int]] = []
    stored: dict[str, None] = {}
    for dataset, samples in report.samples.items():
        for result, columns in samples.values.items():
            n = max((len(values) for values in columns.values()), default=0)
            blocks.append((dataset, result, samples, columns, n))
            stored.update(dict.fromkeys(_RENAMED.get(c, c) for c in columns))
    names = [*SAMPLE_LEADING, *(c for c in stored if c not in SAMPLE_LEADING)]
    table: dict[str, list[Any]] = {name: [] for name in names}
    for dataset, result, samples, columns, n in blocks:
        fixed = {
            "model": [report.model.name] * n,
            "dataset": [dataset] * n,
            "perturbation": [result] * n,
            "kind": [kinds.get(result)] * n,
            "index": samples.indices[:n],
            "target": [_cell(t) for t in samples.targets[:n]],
        }
        renamed = {_RENAMED.get(c, c): values for c, values in columns.items()}
        for name in names:
            values = fixed.get(name, renamed.get(name))
            table[name] += [_cell(v) for v in values] if values is not None else [None] * n
    return table


def samples_frame_of(report: ReportLike) -> pd.DataFrame:
    """`sample_columns` as a frame (`robench.samples_frame`)."""
    import pandas as pd

    return pd.DataFrame(sample_columns(report))
