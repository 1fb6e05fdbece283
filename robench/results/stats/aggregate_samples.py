"""Per-sample matrices of results and the bootstrap over samples that aggregates use.

An aggregate (mCE, mean corruption accuracy, mean mIoU under corruption) is a function of one
number per member result: its top-1 accuracy, or its mIoU. A `SampleStatistic` says which
per-sample column holds a result's outcome and how summed per-sample vectors give that number
(`TOP1`: correctness summed / n; `MIOU`: per-image (4, K) pixel counts summed, then mIoU).
The interval resamples samples, one draw for every row of a `Block` (the member results on
one dataset, and two reports' rows when a gate pairs them); blocks on different datasets are
resampled independently (docs/formats.md, "Aggregates"). A replicate's sums are one matrix
product of the draw's counts (`bootstrap`, weighted).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from robench.results.report.schema import PerturbationResult, Report
from robench.results.stats.bootstrap import bootstrap
from robench.results.stats.segmentation_metrics import CountsStatistic

# numpy is imported where it is used: `robench compare` reads reports without it.
if TYPE_CHECKING:
    import numpy as np

# result name -> its statistic (top-1 accuracy, mIoU): a float64 scalar, or one value per
# bootstrap replicate.
Accuracies = Mapping[str, "np.ndarray"]


@dataclass(frozen=True)
class SampleStatistic:
    """Which per-sample column holds a result's outcome, and the statistic of its sums."""

    column: str  # the report's per-sample column (a metric's name)
    label: str  # what the column holds, for reasons ("top-1", "mIoU pixel-count")
    # (sums over drawn samples (..., m) float64, n samples) -> the statistic (...)
    of_sums: Callable[[np.ndarray, int], np.ndarray]


def _mean_of_sums(sums: np.ndarray, n: int) -> np.ndarray:
    return sums[..., 0] / n


def _miou_of_sums(sums: np.ndarray, n: int) -> np.ndarray:
    return CountsStatistic("miou").of_totals(sums.reshape(*sums.shape[:-1], 4, -1))


TOP1 = SampleStatistic("top1", "top-1", _mean_of_sums)
MIOU = SampleStatistic("miou", "mIoU pixel-count", _miou_of_sums)


@dataclass(frozen=True)
class Block:
    """Per-sample outcomes of some results on one dataset's shared positions."""

    dataset: str
    names: list[str]  # row labels (result names, or keys the caller chose)
    values: np.ndarray  # (rows, n, m) float32: top-1 correctness (m = 1) or counts (m = 4K)
    indices: np.ndarray  # (n,) the dataset indices of the columns
    statistic: SampleStatistic = TOP1


def shared_block(
    report: Report,
    dataset: str,
    results: Sequence[PerturbationResult],
    statistic: SampleStatistic = TOP1,
) -> tuple[Block, str | None] | None:
    """The results' outcomes on the sample positions they all cover (the shortest prefix),
    and a caveat when some cover more; None without stored per-sample values (or with
    counts of different class numbers)."""
    import numpy as np

    stored = [report.sample_values(r.name, statistic.column) for r in results]
    rows = [row for row in stored if row is not None]
    if len(rows) < len(stored):
        return None
    lengths = [len(row) for row in rows]
    n = min(lengths, default=0)
    caveat = None
    if len(set(lengths)) > 1:
        caveat = (
            f"member results cover {n} to {max(lengths)} samples (max_samples); computed on "
            f"the first {n} samples, which all of them share"
        )
    widths = {len(np.atleast_1d(row[0])) for row in rows if n}
    if len(widths) > 1:
        return None  # counts of different class numbers cannot be resampled together
    width = widths.pop() if widths else 1
    values = np.array([row[:n] for row in rows], dtype=np.float32).reshape(len(rows), n, width)
    indices = np.asarray(report.samples[dataset].indices[:n], dtype=np.int64)
    return Block(dataset, [r.name for r in results], values, indices, statistic), caveat


def point_accuracies(blocks: Sequence[Block]) -> dict[str, np.ndarray]:
    """Every row's statistic (accuracy, mIoU) over its block's positions."""
    import numpy as np

    found = {}
    for block in blocks:
        n = block.values.shape[1]
        sums = block.values.sum(axis=1, dtype=np.float64)  # (rows, m), exact
        with np.errstate(divide="ignore", invalid="ignore"):
            stats = block.statistic.of_sums(sums, n)
        found.update({name: np.float64(v) for name, v in zip(block.names, stats, strict=True)})
    return found


def bootstrap_accuracies(blocks: Sequence[Block], n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Every row's statistic in `n_boot` replicates, shape (n_boot,): one draw of positions
    per replicate and block, shared by the rows of the block. Deterministic for a seed."""
    import numpy as np

    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    rng = np.random.default_rng(seed)  # one stream: blocks are resampled independently
    found: dict[str, np.ndarray] = {}
    for block in blocks:
        rows, n, width = block.values.shape
        if n == 0:
            found.update({name: np.full(n_boot, np.nan) for name in block.names})
            continue
        # (n, rows x m): one matrix product sums every row's vectors for a chunk of draws
        values = np.ascontiguousarray(block.values.transpose(1, 0, 2).reshape(n, rows * width))

        def of_weights(
            weights: np.ndarray, values: np.ndarray, rows: int = rows, block: Block = block
        ) -> np.ndarray:
            sums = (weights.astype(np.float32) @ values).reshape(len(weights), rows, -1)
            return block.statistic.of_sums(sums.astype(np.float64), values.shape[0])

        stats = bootstrap(of_weights, values, n_resamples=n_boot, seed=rng, width=rows * width)
        found.update({name: stats[:, i] for i, name in enumerate(block.names)})
    return found


def paired_block(base: Block, cand: Block, prefix: tuple[str, str]) -> Block:
    """One block of two reports' rows over the dataset indices both cover, so one draw
    resamples both; row names get `prefix` ("base:", "cand:") to tell them apart."""
    import numpy as np

    common, at_base, at_cand = np.intersect1d(
        base.indices, cand.indices, assume_unique=True, return_indices=True
    )
    values = np.concatenate([base.values[:, at_base], cand.values[:, at_cand]])
    names = [prefix[0] + n for n in base.names] + [prefix[1] + n for n in cand.names]
    return Block(base.dataset, names, values, common, base.statistic)
