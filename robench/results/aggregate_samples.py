"""Per-sample matrices of results and the bootstrap over samples that aggregates use.

An aggregate (mCE, mean corruption accuracy) is a function of its member results' top-1
accuracies. Its interval resamples *samples*, not results: a replicate draws n sample
positions with replacement once and applies the same draw to every row of a `Block` (the
member results on one dataset, and two reports' rows when a gate pairs them), so the errors
of one image under different corruptions stay together. Blocks on different datasets (a clean
result measured on another dataset) are resampled independently.

A draw is held as counts per sample (how often each position was drawn), so a replicate's
accuracies are one matrix product: counts (replicates, n) @ correctness (n, rows) / n.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from robench.results.report import PerturbationResult, Report

# numpy is imported where it is used: `robench compare` reads reports without it.
if TYPE_CHECKING:
    import numpy as np

# result name -> top-1 accuracy: a float64 scalar, or one value per bootstrap replicate.
Accuracies = Mapping[str, "np.ndarray"]

_CHUNK = 8_000_000  # sample draws per chunk of replicates (bounded memory: ~100 MB)


@dataclass(frozen=True)
class Block:
    """Per-sample top-1 correctness of some results on one dataset's shared positions."""

    dataset: str
    names: list[str]  # row labels (result names, or keys the caller chose)
    values: np.ndarray  # (rows, n) float32, 1.0 where top-1 was right
    indices: np.ndarray  # (n,) the dataset indices of the columns


def top1_rows(report: Report, results: Sequence[PerturbationResult]) -> list[list[bool]] | None:
    """Each result's stored per-sample top-1 correctness; None when any is missing."""
    rows = []
    for result in results:
        samples = report.samples.get(result.dataset)
        column = samples.values.get(result.name, {}).get("top1") if samples else None
        if column is None:
            return None
        rows.append(column)
    return rows


def shared_block(
    report: Report, dataset: str, results: Sequence[PerturbationResult]
) -> tuple[Block, str | None] | None:
    """The results' correctness on the sample positions they all cover (the shortest prefix),
    and a caveat when some cover more; None without stored per-sample values."""
    import numpy as np

    rows = top1_rows(report, results)
    if rows is None:
        return None
    lengths = [len(row) for row in rows]
    n = min(lengths, default=0)
    caveat = None
    if len(set(lengths)) > 1:
        caveat = (
            f"member results cover {n} to {max(lengths)} samples (max_samples); computed on "
            f"the first {n} samples, which all of them share"
        )
    values = np.array([row[:n] for row in rows], dtype=np.float32).reshape(len(rows), n)
    indices = np.asarray(report.samples[dataset].indices[:n], dtype=np.int64)
    return Block(dataset, [r.name for r in results], values, indices), caveat


def point_accuracies(blocks: Sequence[Block]) -> dict[str, np.ndarray]:
    """Every row's accuracy over its block's positions."""
    import numpy as np

    found = {}
    for block in blocks:
        means = block.values.mean(axis=1, dtype=np.float64)
        found.update({name: np.float64(m) for name, m in zip(block.names, means, strict=True)})
    return found


def bootstrap_accuracies(blocks: Sequence[Block], n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Every row's accuracy in `n_boot` replicates, shape (n_boot,): one draw of positions per
    replicate and block, shared by the rows of the block. Deterministic for a seed."""
    import numpy as np

    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    rng = np.random.default_rng(seed)
    found: dict[str, np.ndarray] = {}
    for block in blocks:
        rows, n = block.values.shape
        if n == 0:
            found.update({name: np.full(n_boot, np.nan) for name in block.names})
            continue
        means = np.empty((n_boot, rows))
        correct = np.ascontiguousarray(block.values.T)  # (n, rows)
        per_chunk = max(1, _CHUNK // n)
        for start in range(0, n_boot, per_chunk):
            count = min(per_chunk, n_boot - start)
            draws = rng.integers(0, n, size=(count, n))  # (count, n) positions
            draws += np.arange(count)[:, None] * n  # one bin range per replicate
            counts = np.bincount(draws.ravel(), minlength=count * n).reshape(count, n)
            means[start : start + count] = (counts.astype(np.float32) @ correct) / n
        found.update({name: means[:, i] for i, name in enumerate(block.names)})
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
    return Block(base.dataset, names, values, common)
