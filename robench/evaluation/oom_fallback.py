"""Out of GPU memory: run a batch in smaller parts instead of failing the run.

Part sizes, a perturbation's own batch (`OwnBatch`), the messages counted as out of memory and
why results do not depend on the split: docs/formats.md, "Speed modes", "Out of GPU memory".
The runner seeds each part as the batch of a run with that batch size (`runner._BatchWork`).
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
    """A GPU out-of-memory error: torch's own class, or a RuntimeError saying so."""
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
