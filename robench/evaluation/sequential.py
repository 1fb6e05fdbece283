"""Sequential evaluation: samples in a seeded random order, in growing chunks, until a
stopping rule says the numbers are settled: `TargetHalfwidth` (`--target-halfwidth`, the
confidence sequences of results/stats/confidence_sequences.py) or a gate's rule
(results/gate/sequential.py). The order, the chunks and why they resume: docs/sequential.md,
"The run".
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from robench._core.errors import ConfigError
from robench._core.seeding import derive_seed
from robench.evaluation.cost import summed
from robench.evaluation.runner import Job, RunTimes
from robench.evaluation.store.sample_store import SampleRecords
from robench.results.report.schema import PerturbationResult, SequentialInfo
from robench.results.stats.confidence_sequences import (
    covers,
    eb_confidence_sequence,
    final_interval,
    method_text,
)
from robench.results.stats.metrics import METRICS

logger = logging.getLogger(__name__)

Stopping = Literal["target half-width", "gate verdict"]
ORDER_KEY = "sequential-order"  # the order's seed is derive_seed(run seed, ORDER_KEY)
ALPHA = 0.05  # the confidence sequences' level: 95% intervals
MIN_CHECK = 64  # look after chunks of at least this many samples
ORDER_TEXT = (
    "numpy.random.RandomState(derive_seed(seed, 'sequential-order')).permutation of the chosen "
    "indices"
)

# A result label -> metric name -> per-sample values, in evaluation order.
Values = dict[str, dict[str, list[Any]]]


def sequential_order(indices: Sequence[int], seed: int) -> list[int]:
    """`indices` in the seeded random order a sequential run evaluates them in."""
    import numpy as np

    permutation = np.random.RandomState(derive_seed(seed, ORDER_KEY)).permutation(len(indices))
    return [int(indices[i]) for i in permutation]


def check_every(batch_size: int) -> int:
    """Samples per chunk: the smallest multiple of the batch size of at least MIN_CHECK."""
    return batch_size * math.ceil(MIN_CHECK / batch_size)


def chunk_ends(n_available: int, batch_size: int) -> list[int]:
    """The prefix lengths checked: multiples of `check_every`, then every sample."""
    step = check_every(batch_size)
    return [*range(step, n_available, step), n_available]


class StoppingRule(Protocol):
    def settled(self, values: Values, order: dict[str, list[int]]) -> bool:
        """Whether the run may stop after these per-sample values (`order`: each result's
        dataset indices in evaluation order, aligned with its values)."""


@dataclass(frozen=True)
class TargetHalfwidth:
    """Stop once every bounded metric's confidence sequence is at most `target` wide on each
    side, on every result."""

    target: float
    metrics: tuple[str, ...]

    def settled(self, values: Values, order: dict[str, list[int]]) -> bool:
        for by_metric in values.values():
            for name in self.metrics:
                found = by_metric.get(name)
                if found is None:
                    continue  # not computed on this result (an attack metric on clean)
                if not found:
                    return False
                x = [float(v) for v in found]
                halfwidth = eb_confidence_sequence(x, ALPHA, target=self.target).halfwidth
                if halfwidth[-1] > self.target:
                    return False
        return True


def split_metrics(metric_names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The suite's metrics a confidence sequence covers, and the others."""
    covered = [name for name in metric_names if covers(METRICS.get(name))]
    return covered, [name for name in metric_names if name not in covered]


def check_target(target: float | None, suite_name: str, metric_names: Sequence[str]) -> None:
    """Refuse a target half-width no run can meet, or a suite without a bounded metric."""
    if target is None:
        return
    if not 0 <= target <= 0.5:
        raise ConfigError(
            f"--target-halfwidth {target:g} is not a half-width of a 95% interval of an "
            "accuracy; pass a value in [0, 0.5], e.g. 0.01 for +-1 pp (0: every sample)."
        )
    if not split_metrics(metric_names)[0]:
        raise ConfigError(
            f"suite {suite_name!r} reports {', '.join(metric_names)}, which are not means of "
            "per-sample values in [0, 1], so no confidence sequence covers them; drop "
            "--target-halfwidth (or the suite's target_halfwidth)."
        )


def ordered_jobs(jobs: list[tuple[str, Job]], seed: int) -> list[tuple[str, Job]]:
    """The jobs with their data's indices in the sequential order (capped by max_samples)."""
    out = []
    for key, job in jobs:
        indices = sequential_order(job.data.indices, seed)[: job.planned.max_samples or None]
        out.append((key, replace(job, data=replace(job.data, indices=indices))))
    return out


def values_in_order(
    jobs: list[tuple[str, Job]],
    records: dict[str, SampleRecords],
    metric_names: Sequence[str],
    n: int,
) -> tuple[Values, dict[str, list[int]]]:
    """Each result's per-sample metric values over the first `n` samples of its order."""
    metrics = [METRICS.get(name) for name in metric_names]
    prefixes = prefix_records(records, jobs, n)  # in evaluation order
    values: Values = {}
    for label, found in prefixes.items():
        rows = list(found.values())
        values[label] = {
            m.name: [m.per_sample(r) for r in rows]
            for m in metrics
            if not (m.requires and any(m.requires not in r for r in rows))
        }
    return values, {label: list(found) for label, found in prefixes.items()}


def with_sequence_intervals(
    results: list[PerturbationResult],
    values: Values,
    covered: Sequence[str],
    target: float | None,
) -> list[PerturbationResult]:
    """The results with the intervals of `covered` metrics replaced by the confidence
    sequence's at the stopping time (the values in evaluation order)."""
    out = []
    for result in results:
        metrics = dict(result.metrics)
        for name in covered:
            found = values.get(result.name, {}).get(name)
            if name in metrics and found is not None:
                interval = final_interval(found, ALPHA, target)
                metrics[name] = metrics[name].model_copy(update={"ci95": interval})
        out.append(result.model_copy(update={"metrics": metrics}))
    return out


def merged_times(parts: list[RunTimes]) -> RunTimes:
    """The run times of a sequential run's chunks as one run's."""
    merged = RunTimes()
    for part in parts:
        for label, seconds in part.seconds.items():
            merged.seconds[label] = merged.seconds.get(label, 0.0) + seconds
        merged.summaries.update(part.summaries)
        merged.passes = summed([merged.passes, part.passes])
        if merged.batch_size_note is None:
            merged.batch_size_note = part.batch_size_note
    used = [part.batch_size_used for part in parts if part.batch_size_used]
    merged.batch_size_used = min(used, default=0)
    return merged


def prefix_records(
    records: dict[str, SampleRecords], jobs: list[tuple[str, Job]], n: int
) -> dict[str, SampleRecords]:
    """Each result's records of the first `n` samples of its order (a resumed store may hold
    more, from a run that went on longer)."""
    out = {}
    for _, job in jobs:
        found = records.get(job.planned.label, {})
        out[job.planned.label] = {i: found[i] for i in job.data.indices[:n] if i in found}
    return out


@dataclass
class SequentialRun:
    """A sequential run: its rule, and where it stopped (filled in by `run`)."""

    rule: StoppingRule
    stopping: Stopping
    target: float | None
    covered: list[str]  # metrics whose intervals are the confidence sequence's
    skipped: list[str]  # the suite's other metrics
    n_stopped: int = 0
    n_available: int = 0
    reached: bool = False

    def run(
        self,
        run_jobs: Callable[[list[Job]], RunTimes],
        records: Callable[[], dict[str, SampleRecords]],
        jobs: list[tuple[str, Job]],
        metric_names: Sequence[str],
        batch_size: int,
    ) -> RunTimes:
        """Growing prefixes of the jobs' order (`run_jobs`, into a store whose `records` the
        rule reads) until the rule is settled or the data run out."""
        parts: list[RunTimes] = []
        self.n_available = max((len(job.data.indices) for _, job in jobs), default=0)
        for n in chunk_ends(self.n_available, batch_size):  # every job on its first n samples
            prefixes = [
                replace(job, data=replace(job.data, indices=job.data.indices[:n]))
                for _, job in jobs
            ]
            parts.append(run_jobs(prefixes))
            self.n_stopped = n
            if self.rule.settled(*values_in_order(jobs, records(), metric_names, n)):
                self.reached = True
                break
        stopped = "met its rule" if self.reached else "ran out of samples"
        logger.info("sequential run %s after %d samples", stopped, self.n_stopped)
        return merged_times(parts)

    def info(self, batch_size: int) -> SequentialInfo:
        """The report's `sequential` section."""
        return SequentialInfo(
            stopping=self.stopping,
            target_halfwidth=self.target,
            n_stopped=self.n_stopped,
            n_available=self.n_available,
            reached=self.reached,
            method=method_text(self.target),
            alpha=ALPHA,
            check_every=check_every(batch_size),
            order=ORDER_TEXT,
            metrics=list(self.covered),
            skipped_metrics=list(self.skipped),
        )


def plan_sequential(
    metric_names: Sequence[str], target: float | None, stop_rule: StoppingRule | None
) -> SequentialRun | None:
    """The run's sequential plan: a gate's `stop_rule`, or the target half-width; None for a
    fixed-n run."""
    covered, skipped = split_metrics(metric_names)
    if stop_rule is not None:
        return SequentialRun(stop_rule, "gate verdict", None, covered, skipped)
    if target is None:
        return None
    for name in skipped:
        logger.warning(
            "--target-halfwidth: %s is not a mean of values in [0, 1]; it does not decide "
            "when the run stops and keeps its usual interval.",
            name,
        )
    rule = TargetHalfwidth(target, tuple(covered))
    return SequentialRun(rule, "target half-width", target, covered, skipped)
