"""An evaluation end to end: the request and `evaluate`, suites, the runner (batching,
seeding, resume), the per-sample store, the sanity battery and the run's environment.

`robench.evaluation.suites` imports no torch, so suites validate without it; `evaluate` and
`EvalRequest` are loaded on first use.

May import: `robench.tasks`, `robench.perturbations`, `robench.models`, `robench.data`,
`robench.diagnostics`, `robench.results`, `robench._core`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EvalRequest", "evaluate"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'robench.evaluation' has no attribute {name!r}")
    from robench.evaluation import request as module

    return getattr(module, name)
