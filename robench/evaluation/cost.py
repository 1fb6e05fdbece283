"""What each result cost in model passes, counted while the runner ran it.

The runner counts every job's passes with `robench.models.pass_counter` (hooks on the scored
model and on a transfer attack's surrogate); this module turns those counts into the report's
`ResultCost`, sums them over a sequential run's chunks and over torchrun's ranks, and adds a
text attack's own count of its queries (its per-sample `queries` column).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from robench.models.pass_counter import PassCount
from robench.results.report.schema import ResultCost

QUERIES_COLUMN = "queries"  # the per-sample column text attacks count their queries in


def summed(parts: Iterable[Mapping[str, PassCount]]) -> dict[str, PassCount]:
    """Per-result counts of several runs (chunks, ranks) as one run's."""
    total: dict[str, PassCount] = {}
    for part in parts:
        for label, count in part.items():
            total[label] = total.get(label, PassCount()) + count
    return total


def result_cost(count: PassCount | None, records: Sequence[Mapping[str, Any]]) -> ResultCost | None:
    """The report's cost of one result from its counted passes (None when nothing ran in
    this process: a result resumed whole) and its per-sample records (text attacks' queries,
    per sample of the result)."""
    if count is None or count.samples == 0:
        return None
    n = count.samples
    counted = [row[QUERIES_COLUMN] for row in records if row.get(QUERIES_COLUMN) is not None]
    queries = int(sum(counted)) if counted else None
    return ResultCost(
        forward=count.forward,
        backward=count.backward,
        scoring_forward=count.scoring_forward,
        samples=n,
        forward_per_sample=count.forward / n,
        backward_per_sample=count.backward / n,
        passes_per_sample=(count.forward + count.backward) / n,
        queries=queries,
        queries_per_sample=None if queries is None else queries / len(records),
    )
