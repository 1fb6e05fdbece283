"""Top-k accuracy with a Wilson score 95% interval.

Accuracies are fractions in [0, 1] computed from per-sample predictions, so a resumed run
and an uninterrupted one give the same numbers, and a gate can pair samples across runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from robench._core.registry import Registry

Z_95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion; (0, 1) when n == 0.

    Preferred over the normal approximation because it stays inside [0, 1] and behaves at
    accuracies near 0 or 1, which robust accuracy under strong attacks often is.
    """
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class MetricSpec:
    """How to compute one per-sample metric and which direction is better."""

    name: str
    higher_is_better: bool
    per_sample: Callable[[int, Sequence[int]], bool]  # (label, top-k predictions) -> correct
    description: str


METRICS: Registry[MetricSpec] = Registry("metric")


def _register(spec: MetricSpec) -> None:
    METRICS.register(spec.name)(spec)


def _top_k(k: int) -> Callable[[int, Sequence[int]], bool]:
    return lambda label, topk: label in topk[:k]


_register(MetricSpec("top1", True, _top_k(1), "top-1 accuracy (fraction of samples)"))
_register(MetricSpec("top5", True, _top_k(5), "top-5 accuracy (fraction of samples)"))
