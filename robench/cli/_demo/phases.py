"""The demo's phases, each line saying what is left and about how long it will take.

Each phase is sized before the demo starts in seconds on an idle 2-core machine: an
evaluation by its counted model passes (`suite_cost`, an upper bound that never looks at a
clock) times the seconds per pass of that task's nano model, plus a fixed overhead; figures
and the page by their measured seconds. While the demo runs, the time taken over the size of
the phases done is this machine's pace (2 on a machine twice as slow or busy), and what is
left is the size of the phases still to run times that pace.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

logger = logging.getLogger(__name__)

# Seconds per counted model pass on 2 idle cores, by the suite's task: the evaluation time of
# `robench demo --quick`'s reports (their `wall_time_s`) over their `suite_cost` passes.
SECONDS_PER_PASS = {
    "image-classification": 0.0004,
    "language-modeling": 0.006,
    "semantic-segmentation": 0.0015,
    "text-classification": 0.0005,
}
# Loading a model, its data and writing its report, per evaluation (seconds, idle).
EVALUATION_OVERHEAD_S = 1.0
# Phases without model passes, in seconds on 2 idle cores (benchmarks/bench_demo.py's phases).
FIXED_S = {"figures": 1.5, "page": 0.8}


@dataclass(frozen=True)
class Phase:
    """One line of the demo's progress: what it starts, and its size in idle seconds."""

    what: str
    idle_s: float


def evaluation_phase(what: str, suite: str, samples: int, models: int = 1) -> Phase:
    """An evaluation of `models` models under `suite` on `samples` samples, sized by its passes
    (each planned entry on at most its own `max_samples`)."""
    from robench.evaluation.sanity.budget import suite_cost
    from robench.evaluation.suites import load_suite

    loaded = load_suite(suite)
    counts = {p.label: min(samples, p.max_samples or samples) for p in loaded.plan}
    per_pass = SECONDS_PER_PASS.get(loaded.suite.task, SECONDS_PER_PASS["image-classification"])
    idle = models * (EVALUATION_OVERHEAD_S + per_pass * suite_cost(loaded.plan, counts))
    return Phase(what, idle)


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value < 120 else f"{value / 60:.1f} min"


class PhaseClock:
    """Logs each phase as it starts: the time since the demo began, its number, and what is
    left with an estimate of its time."""

    def __init__(self, phases: list[Phase]) -> None:
        self.phases = phases
        self._started = time.perf_counter()
        self._next = 0

    def start(self, what: str) -> None:
        """Log the start of the next planned phase, whose line is `what`."""
        elapsed = time.perf_counter() - self._started
        index = min(self._next, len(self.phases) - 1)
        self._next += 1
        logger.info("demo [%5.1fs] %s (%s)", elapsed, what, self.left(index, elapsed))

    def left(self, index: int, elapsed: float) -> str:
        """What is left once phase `index` (0-based) starts at `elapsed` seconds."""
        done = sum(p.idle_s for p in self.phases[:index])
        remaining = sum(p.idle_s for p in self.phases[index:])
        count = len(self.phases) - index
        if done > 0 and elapsed > 0:
            pace = elapsed / done
            estimate = f"about {_seconds(remaining * pace)} at the pace so far"
        else:
            estimate = f"about {_seconds(remaining)} on 2 idle cores"
        return f"phase {index + 1} of {len(self.phases)}; {count} left, {estimate}"

    def done(self) -> None:
        elapsed = time.perf_counter() - self._started
        logger.info("demo [%5.1fs] done", elapsed)
