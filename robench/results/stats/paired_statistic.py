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
    from typing import TypeAlias

    import numpy as np

    # Per-sample values as a report stores them, or as an array.
    Values: TypeAlias = Sequence[Any] | np.ndarray
    # (difference, 95% interval, p-value of the alternative, standard deviation)
    PairedResult: TypeAlias = tuple[float, tuple[float, float], float, float]


class PairedStatistic(Protocol):
    @property
    def unit(self) -> str:
        """What one bootstrap resample draws ("samples", "images"), for the gate's text."""

    def __call__(self, values: Sequence[Any], /) -> float:
        """The statistic of the per-sample values (NaN for none)."""

    def paired(
        self, baseline: Values, candidate: Values, n_resamples: int, seed: int, alternative: str
    ) -> PairedResult:
        """A paired bootstrap over samples of candidate - baseline: (difference, 95%
        interval, p-value of `alternative` "less" or "greater", standard deviation)."""
