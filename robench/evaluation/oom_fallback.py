"""Out of GPU memory: run a batch in smaller parts instead of failing the run.

When a batch's work (attack and scoring) runs out of CUDA memory, the runner's
`SplitOnOutOfMemory` frees the cache, halves the part size (divides it by its smallest prime
factor, so every part size divides --batch-size: 64 -> 32 -> 16, 100 -> 50 -> 25 -> 5) and
retries the part; the smaller size is kept for every later batch, down to one sample, where
the run stops with a DeviceMemoryError (exit 2; the finished batches are kept for --resume).
The store still receives whole batches, so --resume and the report are unchanged.

A perturbation whose model calls are sized by its own parameter (randomized smoothing's
`batch` of noisy copies, a text attack's `query_batch`: robench/perturbations/own_batch.py)
runs them in `OwnBatch.calls()`; when memory ran out inside one of them, it is that batch,
not --batch-size, that is halved (down to 1), and messages name the knob that was turned.
The noise and candidates such a perturbation draws do not depend on its parts, so neither do
its results. cuBLAS and cuDNN report an allocation that failed in their own words
(CUBLAS_STATUS_ALLOC_FAILED, CUDNN_STATUS_NOT_ENOUGH_WORKSPACE, ...): out of memory too.

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
from robench.perturbations.own_batch import OwnBatch
from robench.tasks.base import Columns

logger = logging.getLogger(__name__)

# work(start, stop, size): the record columns of rows [start, stop) of a batch, run as a
# part of `size` rows.
PartWork = Callable[[int, int, int], Columns]


# What a RuntimeError says when the GPU ran out of memory: torch's allocator (older torch
# raises a plain RuntimeError), the CUDA runtime, cuBLAS and cuDNN failing to allocate.
OUT_OF_MEMORY_MESSAGES = (
    "CUDA out of memory",
    "CUDA error: out of memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_NOT_ENOUGH_WORKSPACE",
)


def is_out_of_memory(exc: BaseException) -> bool:
    """A GPU out-of-memory error: torch's own class, or a RuntimeError whose message is one
    of OUT_OF_MEMORY_MESSAGES."""
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in OUT_OF_MEMORY_MESSAGES)


def _smaller(size: int) -> int:
    """The next part size: `size` divided by its smallest prime factor (halved when even)."""
    factor = next(f for f in range(2, size + 1) if size % f == 0)
    return size // factor


class SplitOnOutOfMemory:
    """Runs batches in parts of at most `size` rows, shrinking `size` on GPU out-of-memory,
    or a perturbation's own batch when memory ran out in one of its model calls."""

    def __init__(self, batch_size: int) -> None:
        self.size = batch_size  # the largest part the model runs on now
        self._first_split: tuple[str, int] | None = None  # where, and the size that failed
        self._own_splits: list[str] = []  # each halving of a perturbation's own batch

    @property
    def note(self) -> str | None:
        """One sentence for the report when batches were split, else None."""
        phrases = list(self._own_splits)
        if self._first_split is not None:
            where, failed = self._first_split
            phrases.insert(
                0,
                f"at {where} on {failed} samples; from there on batches ran in parts of at "
                f"most {self.size}",
            )
        return "out of GPU memory " + "; ".join(phrases) if phrases else None

    def run(self, rows: int, work: PartWork, where: str, own: OwnBatch | None = None) -> Columns:
        """The columns of a batch of `rows` rows, from `work` on consecutive parts; `own`:
        the perturbation's own batch, if it has one."""
        parts: list[Columns] = []
        start = 0
        while start < rows:
            stop = min(start + self.size, rows)
            if own is not None:
                own.ran_out = False
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
            _free_memory()
            if own is not None and own.ran_out:
                self._shrink_own(own, where, message)
            else:
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
        self.size = _smaller(self.size)
        if self._first_split is None:
            self._first_split = (where, failed)
        logger.warning(
            "out of GPU memory on %d samples at %s; running batches in parts of %d from here "
            "on (lower --batch-size to start there)",
            failed,
            where,
            self.size,
        )

    def _shrink_own(self, own: OwnBatch, where: str, message: str) -> None:
        if own.size == 1:
            raise DeviceMemoryError(
                f"out of GPU memory at {where} with one row per model call of {own.kind} "
                f"({message}); free the GPU of other processes or use a GPU with more memory "
                f"({own.knob} cannot go lower)."
            )
        failed, own.size = own.size, max(1, own.size // 2)
        self._own_splits.append(
            f"at {where} in {own.kind}'s model calls of {failed} rows; they ran in parts of "
            f"{own.size} from there on ({own.knob})"
        )
        logger.warning(
            "out of GPU memory at %s in %s's model calls of %d rows; running them in parts "
            "of %d from here on (lower %s to start there)",
            where,
            own.kind,
            failed,
            own.size,
            own.knob,
        )


def _free_memory() -> None:
    """Let the allocator hand back what the failed part held before the retry."""
    gc.collect()
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()
