"""Side-by-side tables of several reports, in the shape of the paper's Tables 1, 2 and 4: a
row per report, a column per perturbation and metric (or aggregate) that every report has on
the same terms, the rest dropped with a note. The output formats live in `formats.py`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robench._core.errors import ConfigError
from robench._core.registry import did_you_mean
from robench._core.units import display_pixel_value
from robench.results.compare.cost_column import COST_METRIC, with_cost
from robench.results.compare.tables import ARROWS as ARROWS
from robench.results.report.schema import AggregateResult, Report, device_type_note, precision_note
from robench.results.stats.aggregates import find_aggregate

# Re-exported: how a metric is shown comes from the metric registry.
from robench.results.stats.metrics import MetricDisplay as MetricDisplay
from robench.results.stats.metrics import higher_is_better
from robench.results.stats.metrics import metric_display as metric_display

ColumnKey = tuple[str, str]  # (perturbation, metric)


@dataclass(frozen=True)
class Column:
    """One compared perturbation x metric, or one aggregate (`perturbation` its name,
    `mce@imagenet-c`, `metric` its kind, `mce`), with its direction."""

    perturbation: str
    metric: str
    higher_is_better: bool
    # Samples behind this column when fewer than the reports' sample set (max_samples).
    subset: int | None = None
    aggregate: bool = False

    @property
    def key(self) -> ColumnKey:
        return (self.perturbation, self.metric)

    @property
    def id(self) -> str:
        """How csv and json name the column: `fgsm/top1`, or the aggregate's name `mce`."""
        return self.perturbation if self.aggregate else f"{self.perturbation}/{self.metric}"

    @property
    def group(self) -> str:
        """What the column sits under: its perturbation, or `aggregates` (`aggregates @ds`)."""
        if not self.aggregate:
            return self.perturbation
        _, at, dataset = self.perturbation.partition("@")
        return f"aggregates @{dataset}" if at else "aggregates"

    @property
    def display(self) -> MetricDisplay:
        found = find_aggregate(self.metric) if self.aggregate else None
        return found.display if found is not None else metric_display(self.metric)

    def metric_text(self, grouped: bool = True) -> str:
        """`top-1 (%, n=100)`: the metric's label, unit and a subset's sample count (`grouped`:
        with an aggregate's ` @dataset`)."""
        notes = [self.display.unit] if self.display.unit else []
        if self.subset is not None:  # fewer samples than the other columns: say so
            notes.append(f"n={self.subset}")
        where = self.group.removeprefix("aggregates") if grouped and self.aggregate else ""
        return self.display.label + where + (f" ({', '.join(notes)})" if notes else "")

    def described(self) -> dict[str, object]:
        """The column as `--format json` lists it."""
        named = ("perturbation", "metric", "aggregate", "higher_is_better")
        return {name: getattr(self, name) for name in named} | {"unit": self.display.unit}


@dataclass(frozen=True)
class Cell:
    """One report's value in one column, in display units (percent for accuracies)."""

    value: float
    ci95: tuple[float, float]
    mark: str  # "best", "second" or ""
    diff: float | None = None  # value - the reference row's value, when there is a reference


@dataclass
class Comparison:
    """The compared values, one `Cell` per row and column, ready to render."""

    rows: list[str]  # row labels, one per report
    columns: list[Column]
    cells: dict[tuple[str, ColumnKey], Cell]  # (row label, column key) -> cell
    reference: str | None  # row label of the reference report
    sources: dict[str, str]  # row label -> report path
    title: str
    notes: list[str] = field(default_factory=list)  # what was left out and why

    def cell(self, row: str, column: Column) -> Cell:
        return self.cells[row, column.key]


def row_labels(reports: Sequence[tuple[str, Report]]) -> list[str]:
    """Model names; the checkpoint's short sha256 where two rows share a name."""
    names = [report.model.name for _, report in reports]
    labels = []
    for (path, report), name in zip(reports, names, strict=True):
        sha = report.model.checkpoint_sha256
        tag = sha[:8] if sha else Path(path).stem
        labels.append(f"{name} @{tag}" if names.count(name) > 1 else name)
    return [
        f"{label} #{i + 1}" if labels.count(label) > 1 else label for i, label in enumerate(labels)
    ]


def _dataset_notes(labels: list[str], reports: list[Report]) -> list[str]:
    notes = []
    suites = {f"{r.suite.name} v{r.suite.version}" for r in reports}
    if len(suites) > 1:
        notes.append(
            f"the reports come from different suites ({', '.join(sorted(suites))}); only "
            "perturbations present in every report with the same parameters are compared."
        )
    datasets = {(r.data.kind, r.data.split, r.data.n_total, r.data.classes) for r in reports}
    if len(datasets) > 1:
        notes.append("the reports were evaluated on different datasets (kind, split or size).")
    notes += [n for n in (precision_note(reports, labels), device_type_note(reports, labels)) if n]
    groups: dict[str, list[str]] = {}
    for label, report in zip(labels, reports, strict=True):
        groups.setdefault(report.data.indices_sha256, []).append(label)
    if len(groups) > 1:
        parts = "; ".join(
            f"{', '.join(rows)} (indices_sha256 {sha[:12]})" for sha, rows in groups.items()
        )
        notes.append(
            f"the reports were evaluated on different sample sets: {parts}; differences "
            "between them include sampling noise and are not paired."
        )
    return notes


def comparable_params(params: Mapping[str, Any]) -> str:
    """The parameters two reports' results must share to share a column, as one string. A
    bounded result (with `eps`) that names no norm is L-infinity, the attacks' default, so it
    lines up with one that says so ("Linf" is "linf"); other norms never share a column."""
    if "eps" in params:
        params = {**params, "norm": str(params.get("norm", "linf")).lower()}
    return json.dumps(params, sort_keys=True, default=str)


def _collect(
    labels: list[str], reports: list[Report], metrics: Sequence[str] | None
) -> tuple[list[Column], list[str]]:
    """Columns present and comparable in every report, and notes on the ones dropped."""
    seen: dict[ColumnKey, dict[str, tuple[dict, bool]]] = {}
    counts: dict[ColumnKey, set[int]] = {}
    for label, report in zip(labels, reports, strict=True):
        for result in report.results:
            for metric, value in result.metrics.items():
                if metrics is None or metric in metrics:
                    entry = (result.params, value.higher_is_better)
                    seen.setdefault((result.name, metric), {})[label] = entry
                    counts.setdefault((result.name, metric), set()).add(result.n_samples)
    full = min(report.data.n_samples for report in reports)
    if metrics is not None:
        available = sorted(
            {m for r in reports for res in r.results for m in res.metrics}
            | {n for r in reports for a in r.aggregates for n in (a.name, a.kind)}
        )
        for metric in metrics:
            if metric not in available:
                raise ConfigError(did_you_mean(metric, available, "metric"))
    columns, missing, differing = [], [], []
    for key, by_row in seen.items():
        name = "/".join(key)
        absent = [label for label in labels if label not in by_row]
        params = {comparable_params(p) for p, _ in by_row.values()}
        directions = {d for _, d in by_row.values()}
        if absent:
            missing.append(f"{name} (missing in {', '.join(absent)})")
        elif len(params) > 1 or len(directions) > 1:
            differing.append(name)
        else:
            fewest = min(counts[key])
            subset = fewest if fewest < full else None
            direction = higher_is_better(key[1], directions.pop())
            columns.append(Column(key[0], key[1], direction, subset))
    notes = []
    if missing:
        notes.append(f"dropped columns not present in every report: {'; '.join(missing)}.")
    if differing:
        notes.append(
            f"dropped columns measured with different parameters or directions across reports: "
            f"{', '.join(differing)}."
        )
    return columns, notes


def _protocol(report: Report, aggregate: AggregateResult) -> dict[str, object]:
    """What an aggregate's value depends on besides the model, by what it is called."""
    data = report.datasets.get(aggregate.dataset)
    members = [r for r in report.results if r.name in aggregate.members]
    return {
        "kind": aggregate.kind,
        "members": sorted(aggregate.members),
        "member parameters": sorted(comparable_params(r.params) for r in members),
        "dataset": aggregate.dataset,
        "classes": data.classes if data else None,
        "label space": data.label_space.sha256 if data and data.label_space else None,
        "preprocessing": data.preprocessing_note if data else None,
    }


def _collect_aggregates(
    labels: list[str], reports: list[Report], metrics: Sequence[str] | None
) -> tuple[list[Column], list[str]]:
    """Aggregate columns with a value in every report on the same protocol; notes on the rest."""
    names = dict.fromkeys(
        a.name
        for report in reports
        for a in report.aggregates
        if metrics is None or a.name in metrics or a.kind in metrics
    )
    columns, notes = [], []
    for name in names:
        found = [report.aggregate(name) for report in reports]
        lacking = [
            f"{label}: {a.reason if a is not None else 'not computed'}"
            for label, a in zip(labels, found, strict=True)
            if a is None or a.value is None
        ]
        if lacking:
            notes.append(f"dropped aggregate {name}, without a value in {'; '.join(lacking)}")
            continue
        present = [a for a in found if a is not None]
        protocols = [_protocol(r, a) for r, a in zip(reports, present, strict=True)]
        differ = [
            what
            for what in protocols[0]
            if len({json.dumps(p[what], default=str) for p in protocols}) > 1
        ]
        if differ:
            notes.append(
                f"dropped aggregate {name}, computed on different protocols across reports "
                f"({', '.join(differ)})."
            )
            continue
        kind = present[0].kind
        columns.append(Column(name, kind, present[0].higher_is_better, aggregate=True))
    return columns, notes


def _sample_notes(labels: list[str], reports: list[Report], columns: list[Column]) -> list[str]:
    notes = []
    for perturbation in dict.fromkeys(c.perturbation for c in columns if not c.aggregate):
        counts = {
            label: next(r.n_samples for r in report.results if r.name == perturbation)
            for label, report in zip(labels, reports, strict=True)
        }
        if len(set(counts.values())) > 1:
            shown = ", ".join(f"{label}: {n}" for label, n in counts.items())
            notes.append(f"{perturbation} was evaluated on different numbers of samples ({shown}).")
    return notes


def best_marks(values: list[float], higher_is_better: bool) -> list[str]:
    """Bold the best, underline the second best; ties (at 2 decimals) share a mark. A value
    that is not known (NaN: a cost an older report did not count) is never marked."""
    shown = [round(value, 2) for value in values]
    known = {value for value in shown if not math.isnan(value)}
    distinct = sorted(known, reverse=higher_is_better)  # best first
    # One value: nothing marked; two: the best only; three or more: the best and the second.
    marks = dict(zip(distinct[: len(distinct) - 1], ("best", "second"), strict=False))
    return [marks.get(value, "") for value in shown]


def _cells(
    labels: list[str], reports: list[Report], columns: list[Column], reference: int | None
) -> dict[tuple[str, ColumnKey], Cell]:
    """Every (row, column) cell in display units, marked, with its difference to the reference."""
    found: list[dict[ColumnKey, tuple[float, tuple[float, float]]]] = []
    for report in reports:
        values = {
            (r.name, m): (v.value, v.ci95) for r in report.results for m, v in r.metrics.items()
        }
        for a in report.aggregates:
            if a.value is not None:
                values[a.name, a.kind] = (a.value, a.ci95 or (a.value, a.value))
        found.append(values)
    cells = {}
    for column in columns:
        scale = column.display.scale
        measured = [metrics[column.key] for metrics in found]
        shown = [value * scale for value, _ in measured]
        base = shown[reference] if reference is not None else None
        marks = best_marks(shown, column.higher_is_better)
        for label, (_, ci95), value, mark in zip(labels, measured, shown, marks, strict=True):
            cells[label, column.key] = Cell(
                value=value,
                ci95=(ci95[0] * scale, ci95[1] * scale),
                mark=mark,
                diff=None if base is None or math.isnan(value - base) else value - base,
            )
    return cells


def _with_accuracy_at(
    reports: Sequence[tuple[str, Report]], at_eps: Sequence[float]
) -> list[tuple[str, Report]]:
    """The reports with a result `NAME@EPS` per minimal-norm result and eps of `at_eps` up
    to its cap (top-1 from the per-sample norms); refused when none can be read."""
    from robench.results.stats.robustness_curves import (
        accuracy_at_results,
        is_minimal_norm,
        result_cap,
    )

    extras = [accuracy_at_results(report, at_eps, f"report {path}") for path, report in reports]
    if not any(extras):
        caps = sorted({result_cap(x) for _, r in reports for x in r.results if is_minimal_norm(x)})
        caps = [cap for cap in caps if math.isfinite(cap)]  # uncapped ones read every eps
        where = (
            f"the largest cap is {display_pixel_value(caps[-1])}"
            if caps
            else "no report has a minimal-norm result"
        )
        raise ConfigError(
            "--at-eps reads accuracy from minimal-norm results' norms up to their cap, and "
            f'{where}; pass a smaller eps, or reports of a suite with kind = "minimal-norm" '
            "(e.g. minimal-norm-smoke)."
        )
    return [
        (path, report.model_copy(update={"results": report.results + extra}))
        for (path, report), extra in zip(reports, extras, strict=True)
    ]


def _with_certified_at(
    reports: Sequence[tuple[str, Report]], at_radius: Sequence[float]
) -> list[tuple[str, Report]]:
    """The reports with `certified_accuracy@R` per randomized-smoothing result and radius of
    `at_radius`; refused when no report has one."""
    from robench.results.stats.certified_curves import is_certified, with_certified_at

    if not any(is_certified(x) for _, report in reports for x in report.results):
        raise ConfigError(
            "--at-radius reads certified accuracy from randomized-smoothing results, and no "
            'report has one; pass reports of a suite with kind = "randomized-smoothing" '
            "(e.g. certify)."
        )
    return [(path, with_certified_at(r, at_radius, f"report {path}")) for path, r in reports]


def build_comparison(
    reports: Sequence[tuple[str, Report]],
    *,
    metrics: Sequence[str] | None = None,
    reference: int | None = None,
    at_eps: Sequence[float] = (),
    at_radius: Sequence[float] = (),
    cost: bool = False,
) -> Comparison:
    """Compare `(path, report)` pairs; `reference` is the index of the reference report.
    `at_eps`, `at_radius` and `cost` add columns as `--at-eps`, `--at-radius` and `--cost`."""
    if not reports:
        raise ConfigError("compare needs at least one report; pass report JSON files.")
    if at_eps:
        reports = _with_accuracy_at(reports, at_eps)
    if at_radius:
        reports = _with_certified_at(reports, at_radius)
    if cost:
        reports = with_cost(reports)
        metrics = None if metrics is None else [*metrics, COST_METRIC]
    if reference is not None and not 0 <= reference < len(reports):
        raise ValueError(f"reference index {reference} out of range")
    labels = row_labels(reports)
    plain = [report for _, report in reports]
    columns, drop_notes = _collect(labels, plain, metrics)
    aggregate_columns, aggregate_notes = _collect_aggregates(labels, plain, metrics)
    columns += aggregate_columns
    notes = _dataset_notes(labels, plain) + drop_notes + aggregate_notes
    if not columns:
        raise ConfigError(
            "nothing to compare: no perturbation and metric is present, with the same "
            "parameters, in every report; compare reports of the same suite."
        )
    notes += _sample_notes(labels, plain, columns)
    suites = dict.fromkeys(f"{r.suite.name} v{r.suite.version}" for r in plain)
    return Comparison(
        rows=labels,
        columns=columns,
        cells=_cells(labels, plain, columns, reference),
        reference=labels[reference] if reference is not None else None,
        sources={label: path for label, (path, _) in zip(labels, reports, strict=True)},
        title=" / ".join(suites),
        notes=notes,
    )
