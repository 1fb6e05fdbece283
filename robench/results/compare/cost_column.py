"""The cost column of `robench compare --cost`: each result's counted model passes per sample,
lower is better; NaN ("unknown", never marked best) without a counted cost (docs/formats.md,
"Counted cost").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from robench.results.report.schema import MetricValue, PerturbationResult, Report

COST_METRIC = "passes_per_sample"  # the column's metric name (csv: `pgd/passes_per_sample`)
UNKNOWN = "unknown"  # how a cell without a counted cost is shown


def _cost_value(result: PerturbationResult) -> MetricValue:
    value = result.cost.passes_per_sample if result.cost is not None else math.nan
    return MetricValue(value=value, ci95=(value, value), higher_is_better=False)


def with_cost(reports: Sequence[tuple[str, Report]]) -> list[tuple[str, Report]]:
    """The reports with each result's passes per sample as one more metric."""
    extended = []
    for path, report in reports:
        results = [
            r.model_copy(update={"metrics": {**r.metrics, COST_METRIC: _cost_value(r)}})
            for r in report.results
        ]
        extended.append((path, report.model_copy(update={"results": results})))
    return extended
