"""Counting a model's forward and backward passes, in samples, at the model itself
(docs/formats.md, "Counted cost").

`PassCounter.counting(*modules)` puts a forward hook on each module inside a `with` block: it
adds each output's batch size, and a tensor hook on an output that is part of a graph adds the
batch size of every gradient reaching it (FAB's `backward(retain_graph=True)` K times is K
backward passes; a forward under `torch.no_grad()` never counts one). The output is returned as
it is (an attack that edits its logits in place still can), and the hooks go on the outermost
module the attacks call: nested modules are not counted twice, and an attack that inspects its
model finds the caller's own (no wrapper class).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import astuple, dataclass
from typing import Any

import torch
from torch import nn

# Whether the passes made now are the runner's scoring re-run (set by `scoring()`).
_SCORING: ContextVar[bool] = ContextVar("robench_scoring_passes", default=False)


@dataclass
class PassCount:
    """Passes counted so far, in samples."""

    forward: int = 0
    backward: int = 0
    scoring_forward: int = 0  # of `forward`: the runner's re-run of the model to score
    samples: int = 0  # the samples these passes were spent on (set by whoever counts)

    def __add__(self, other: PassCount) -> PassCount:
        return PassCount(*map(operator.add, astuple(self), astuple(other)))

    def __sub__(self, other: PassCount) -> PassCount:
        """What was spent since `other`, a copy of this count taken earlier."""
        return PassCount(*map(operator.sub, astuple(self), astuple(other)))


def _count_backward(count: PassCount, grad: torch.Tensor) -> None:
    """A tensor hook on a model's output: its gradient's batch size is one backward pass per
    sample through the model."""
    count.backward += int(grad.shape[0]) if grad.dim() else 1


def _first_tensor(output: Any) -> torch.Tensor | None:
    """The tensor a module returned (or the first of a tuple, list or dict of them)."""
    if isinstance(output, torch.Tensor):
        return output
    values = output.values() if isinstance(output, dict) else output
    if isinstance(values, (tuple, list)) or isinstance(output, dict):
        return next((v for v in values if isinstance(v, torch.Tensor)), None)
    return None


@contextmanager
def scoring() -> Iterator[None]:
    """Passes made inside are the runner's re-run of the model to score (also counted)."""
    token = _SCORING.set(True)
    try:
        yield
    finally:
        _SCORING.reset(token)


class PassCounter:
    """Counts the passes of the modules it is counting, in samples, into `count`."""

    def __init__(self) -> None:
        self.count = PassCount()

    def _hook(self, module: nn.Module, args: Any, output: Any) -> Any:
        tensor = _first_tensor(output)
        if tensor is None:
            return None  # nothing batched to count
        rows = int(tensor.shape[0]) if tensor.dim() else 1
        self.count.forward += rows
        if _SCORING.get():
            self.count.scoring_forward += rows
        if tensor.requires_grad:  # count every backward that reaches this output
            count = self.count  # the job's at forward time, even if its backward comes later
            tensor.register_hook(functools.partial(_count_backward, count))
        return None  # the output itself is left as it is

    @contextmanager
    def counting(self, *modules: nn.Module) -> Iterator[PassCount]:
        """Count the passes of `modules` (each once, however often it is listed) inside the
        block; the hooks are removed on the way out, whatever happens."""
        # A plain callable (a test's stand-in for the model) has no hooks: nothing to count.
        unique = [m for m in {id(m): m for m in modules}.values() if isinstance(m, nn.Module)]
        with ExitStack() as stack:
            for module in unique:
                stack.callback(module.register_forward_hook(self._hook).remove)
            yield self.count
