"""Out of GPU memory: run a batch in smaller parts instead of failing the run.

When a batch's work (attack and scoring) runs out of CUDA memory, the runner's
`SplitOnOutOfMemory` frees the cache, halves the part size (divides it by its smallest prime
factor, so every part size divides --batch-size: 64 -> 32 -> 16, 100 -> 50 -> 25 -> 5) and
retries the part; the smaller size is kept for every later batch, down to one sample, where
the run stops with a DeviceMemoryError (exit 2; the finished batches are kept for --resume).
The store still receives whole batches, so --resume and the report are unchanged.

Results do not depend on the split: the runner seeds a part of n samples starting at row k of
the evaluated samples with the seed of batch k / n of a run with `--batch-size n` (n divides
k), so every part computes exactly what that run computes for the same samples.
Deterministic perturbations (clean, corruptions, FGSM, PGD without a random start) give the
same per-sample results whatever the split; a randomised attack (PGD's random start,
AutoAttack, SPSA) gives those of `--batch-size n` for the batches run at size n.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable

import torch

from robench._core.errors import DeviceMemoryError, first_line
from robench.tasks.base import Columns

logger = logging.getLogger(__name__)

# work(start, stop, size): the record columns of rows [start, stop) of a batch, run as a
# part of `size` rows.
PartWork = Callable[[int, int, int], Columns]


def is_out_of_memory(exc: BaseException) -> bool:
    """A CUDA out-of-memory error (torch's own class, or the RuntimeError older code raises)."""
    return isinstance(exc, torch.cuda.OutOfMemoryError) or (
        isinstance(exc, RuntimeError) and "CUDA out of memory" in str(exc)
    )


def _smaller(size: int) -> int:
    """The next part size: `size` divided by its smallest prime factor (halved when even)."""
    factor = next(f for f in range(2, size + 1) if size % f == 0)
    return size // factor


class SplitOnOutOfMemory:
    """Runs batches in parts of at most `size` rows, shrinking `size` on CUDA out-of-memory."""

    def __init__(self, batch_size: int) -> None:
        self.size = batch_size  # the largest part the model runs on now
        self._first_split: tuple[str, int] | None = None  # where, and the size that failed

    @property
    def note(self) -> str | None:
        """One sentence for the report when batches were split, else None."""
        if self._first_split is None:
            return None
        where, failed = self._first_split
        return (
            f"out of GPU memory at {where} on {failed} samples; from there on batches ran in "
            f"parts of at most {self.size}"
        )

    def run(self, rows: int, work: PartWork, where: str) -> Columns:
        """The columns of a batch of `rows` rows, from `work` on consecutive parts."""
        parts: list[Columns] = []
        start = 0
        while start < rows:
            stop = min(start + self.size, rows)
            try:
                parts.append(work(start, stop, self.size))
            except RuntimeError as exc:  # torch.cuda.OutOfMemoryError is a RuntimeError
                if not is_out_of_memory(exc):
                    raise
                message = first_line(exc, "out of memory")
            else:
                start = stop
                continue
            # Outside the except block: the traceback, and the tensors its frames hold, are gone.
            self._shrink(stop - start, where, message)
        if len(parts) == 1:
            return parts[0]
        return {name: [v for part in parts for v in part[name]] for name in parts[0]}

    def _shrink(self, failed: int, where: str, message: str) -> None:
        if self.size == 1:
            raise DeviceMemoryError(
                f"out of GPU memory on a single sample at {where} ({message}); free the GPU of "
                "other processes or use a GPU with more memory (--batch-size cannot go lower)."
            )
        gc.collect()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        self.size = _smaller(self.size)
        if self._first_split is None:
            self._first_split = (where, failed)
        logger.warning(
            "out of GPU memory on %d samples at %s; running batches in parts of %d from here on",
            failed,
            where,
            self.size,
        )
