"""A perturbation's own batch: the parameter that sizes its model calls, not --batch-size
(randomized smoothing's `batch`, a text attack's `query_batch`), which the runner's
out-of-memory fallback halves (docs/architecture.md, "Perturbation"). What is drawn (noise,
texts) does not depend on `size`, so a sample's result does not either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class OwnBatch:
    """Rows per model call of one perturbation, and whether a call of it failed."""

    kind: str  # the perturbation kind, e.g. "randomized-smoothing"
    param: str  # its parameter the user sets, e.g. "batch"
    size: int  # rows per model call now: the parameter's value until memory ran out
    ran_out: bool = False  # an exception left one of its calls since the flag was cleared

    @property
    def knob(self) -> str:
        """How the user turns it, for messages."""
        return f"the suite's `{self.param}` of {self.kind}"

    @contextmanager
    def calls(self) -> Iterator[int]:
        """Model calls sized by this batch inside the block; yields the rows per call."""
        try:
            yield self.size
        except BaseException:
            self.ran_out = True
            raise

    def parts(self, rows: int) -> Iterator[slice]:
        """Consecutive slices of at most `size` of `rows` rows."""
        for start in range(0, rows, self.size):
            yield slice(start, min(start + self.size, rows))
