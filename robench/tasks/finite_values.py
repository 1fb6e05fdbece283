"""Non-finite numbers are refused, never scored (DESIGN.md, "Core contracts"; docs/errors.md).

Each task's `score` passes what it scores on to `require_finite`, which raises
`NonFiniteOutputs` with the batch rows at fault; the runner, which knows the rows' dataset
indices and the model's name, turns it into one sentence (robench/evaluation/runner.py).
`--allow-nonfinite` switches the refusal off for a run (`nonfinite_allowed`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import torch

from robench._core.errors import DataError

# Whether the run in progress counts non-finite outputs (--allow-nonfinite). A context
# variable: the tasks' `score` is called by the runner, the sanity battery and the checks,
# and only the run's own setting applies.
_ALLOWED: ContextVar[bool] = ContextVar("robench_nonfinite_allowed", default=False)

ALLOW_FLAG = "--allow-nonfinite (Python: allow_nonfinite=True)"


class NonFiniteOutputs(DataError):
    """A model returned NaN or inf for some rows of a batch (`rows`: positions in it)."""

    def __init__(self, rows: Sequence[int], what: str) -> None:
        self.rows = list(rows)
        self.what = what
        super().__init__(
            f"the model returned non-finite {what} (NaN or inf) on {len(self.rows)} sample(s) "
            f"of a batch; check its weights and inputs, or pass {ALLOW_FLAG} to count them."
        )


def non_finite_rows(values: torch.Tensor) -> list[int]:
    """Positions along the first dimension whose values hold a NaN or an inf."""
    if values.numel() == 0 or not values.is_floating_point():
        return []
    finite = torch.isfinite(values.detach().reshape(values.shape[0], -1)).all(dim=1)
    if bool(finite.all()):  # one synchronisation in the common case
        return []
    return (~finite).nonzero().flatten().tolist()


def require_finite(values: torch.Tensor, what: str) -> None:
    """Raise `NonFiniteOutputs` when a row of `values` (logits, losses) is not finite, unless
    the run allows it."""
    if _ALLOWED.get():
        return
    rows = non_finite_rows(values)
    if rows:
        raise NonFiniteOutputs(rows, what)


@contextmanager
def nonfinite_allowed(allowed: bool) -> Iterator[None]:
    """Within it, `require_finite` lets non-finite outputs through when `allowed`."""
    token = _ALLOWED.set(allowed)
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def check_data_finite(inputs: torch.Tensor, indices: Sequence[int]) -> None:
    """Raise DataError naming the first sample of the data (dataset index) whose values hold
    a NaN or an inf, unless the run allows it."""
    rows = [] if _ALLOWED.get() else non_finite_rows(inputs)
    if rows:
        shown = ", ".join(str(indices[r]) for r in rows[:5])
        raise DataError(
            f"sample(s) {shown} of the data hold NaN or inf values ({len(rows)} in this batch); "
            f"fix or drop them (robench scores finite inputs only), or pass {ALLOW_FLAG} to "
            "count them."
        )
