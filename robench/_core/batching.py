"""Cutting a sequence of sample indices into consecutive batches, the one way robench does."""

from __future__ import annotations

from collections.abc import Sequence


def batch_indices(indices: Sequence[int], batch_size: int) -> list[list[int]]:
    """Consecutive batches of at most `batch_size` indices, in order; the last may be short."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    return [list(indices[i : i + batch_size]) for i in range(0, len(indices), batch_size)]
