"""`PairedStatistic`: what a metric's own statistic offers the report and the gate.

A metric whose value is not a mean of per-sample values (perplexity: a ratio of summed NLL
and tokens; mIoU: ratios of summed pixel counts) registers such a statistic
(`Metric.statistic`). The gate pairs two reports with `paired`, whatever the statistic is, so
a task's new statistic needs no change there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np


class PairedStatistic(Protocol):
    @property
    def unit(self) -> str:
        """What one bootstrap resample draws ("samples", "images"), for the gate's text."""

    def __call__(self, values: Sequence[Any], /) -> float:
        """The statistic of the per-sample values (NaN for none)."""

    def paired(
        self,
        baseline: Sequence[Any] | np.ndarray,
        candidate: Sequence[Any] | np.ndarray,
        n_resamples: int,
        seed: int,
        alternative: str,
    ) -> tuple[float, tuple[float, float], float, float]:
        """A paired bootstrap over samples of candidate - baseline: (difference, 95%
        interval, p-value of `alternative` "less" or "greater", standard deviation)."""
