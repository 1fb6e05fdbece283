"""Side-by-side tables of several reports, in the shape of the paper's Tables 1, 2 and 4.

One row per report (model), one column per perturbation and metric; in every column the best
value is bold and the second best underlined, direction-aware (best is the smallest value of a
lower-is-better metric). Only what is comparable is compared:
columns missing from some report, or measured with different parameters or directions, are
dropped with a note, and reports evaluated on different sample sets or data are flagged.
The output formats (rich, markdown, csv, latex, json) live in `robench.results.compare_formats`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from robench._core.errors import ConfigError
from robench._core.registry import did_you_mean

# Re-exported: how a metric is shown comes from the metric registry.
from robench.results.metrics import MetricDisplay as MetricDisplay
from robench.results.metrics import higher_is_better
from robench.results.metrics import metric_display as metric_display
from robench.results.report import Report

ColumnKey = tuple[str, str]  # (perturbation, metric)


ARROWS = {True: "↑", False: "↓"}


@dataclass(frozen=True)
class Column:
    """One compared perturbation x metric, with its direction."""

    perturbation: str
    metric: str
    higher_is_better: bool
    # Samples behind this column when fewer than the reports' sample set (max_samples).
    subset: int | None = None

    @property
    def key(self) -> ColumnKey:
        return (self.perturbation, self.metric)

    @property
    def display(self) -> MetricDisplay:
        return metric_display(self.metric)


@dataclass
class Comparison:
    """The compared values in display units (percent for accuracies), ready to render."""

    values: pd.DataFrame  # index: row labels; columns: MultiIndex (perturbation, metric)
    ci_low: pd.DataFrame
    ci_high: pd.DataFrame
    marks: pd.DataFrame  # "best", "second" or "" per cell
    diffs: pd.DataFrame | None  # value - reference value, when a reference was chosen
    columns: list[Column]
    reference: str | None  # row label of the reference report
    sources: dict[str, str]  # row label -> report path
    title: str
    notes: list[str] = field(default_factory=list)  # what was left out and why

    @property
    def rows(self) -> list[str]:
        return [str(label) for label in self.values.index]


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
        available = sorted({m for r in reports for res in r.results for m in res.metrics})
        for metric in metrics:
            if metric not in available:
                raise ConfigError(did_you_mean(metric, available, "metric"))
    columns, missing, differing = [], [], []
    for key, by_row in seen.items():
        name = "/".join(key)
        absent = [label for label in labels if label not in by_row]
        params = {json.dumps(p, sort_keys=True, default=str) for p, _ in by_row.values()}
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


def _sample_notes(labels: list[str], reports: list[Report], columns: list[Column]) -> list[str]:
    notes = []
    for perturbation in dict.fromkeys(c.perturbation for c in columns):
        counts = {
            label: next(r.n_samples for r in report.results if r.name == perturbation)
            for label, report in zip(labels, reports, strict=True)
        }
        if len(set(counts.values())) > 1:
            shown = ", ".join(f"{label}: {n}" for label, n in counts.items())
            notes.append(f"{perturbation} was evaluated on different numbers of samples ({shown}).")
    return notes


def _marks(values: pd.DataFrame, columns: list[Column]) -> pd.DataFrame:
    """Bold the best, underline the second best; ties (at 2 decimals) share a mark."""
    marks = pd.DataFrame("", index=values.index, columns=values.columns)
    for column in columns:
        shown = values[column.key].round(2)
        ranks = shown.rank(method="dense", ascending=not column.higher_is_better)
        distinct = shown.nunique()
        if distinct >= 2:
            marks.loc[ranks == 1, column.key] = "best"
        if distinct >= 3:
            marks.loc[ranks == 2, column.key] = "second"
    return marks


def build_comparison(
    reports: Sequence[tuple[str, Report]],
    *,
    metrics: Sequence[str] | None = None,
    reference: int | None = None,
) -> Comparison:
    """Compare `(path, report)` pairs; `reference` is the index of the reference report."""
    if not reports:
        raise ConfigError("compare needs at least one report; pass report JSON files.")
    if reference is not None and not 0 <= reference < len(reports):
        raise ValueError(f"reference index {reference} out of range")
    labels = row_labels(reports)
    plain = [report for _, report in reports]
    columns, drop_notes = _collect(labels, plain, metrics)
    notes = _dataset_notes(labels, plain) + drop_notes
    if not columns:
        raise ConfigError(
            "nothing to compare: no perturbation and metric is present, with the same "
            "parameters, in every report; compare reports of the same suite."
        )
    notes += _sample_notes(labels, plain, columns)
    index = pd.MultiIndex.from_tuples([c.key for c in columns], names=["perturbation", "metric"])
    frames: dict[str, list[list[float]]] = {"value": [], "low": [], "high": []}
    for report in plain:
        found = {(r.name, m): v for r in report.results for m, v in r.metrics.items()}
        scaled = [(found[c.key], c.display.scale) for c in columns]
        frames["value"].append([v.value * s for v, s in scaled])
        frames["low"].append([v.ci95[0] * s for v, s in scaled])
        frames["high"].append([v.ci95[1] * s for v, s in scaled])
    values, low, high = (pd.DataFrame(frames[k], index=labels, columns=index) for k in frames)
    ref_label = labels[reference] if reference is not None else None
    suites = dict.fromkeys(f"{r.suite.name} v{r.suite.version}" for r in plain)
    return Comparison(
        values=values,
        ci_low=low,
        ci_high=high,
        marks=_marks(values, columns),
        diffs=values - values.loc[ref_label] if ref_label is not None else None,
        columns=columns,
        reference=ref_label,
        sources={label: path for label, (path, _) in zip(labels, reports, strict=True)},
        title=" / ".join(suites),
        notes=notes,
    )
