"""An evaluation end to end: the request and `evaluate`, suites, the runner (batching,
seeding, resume), the per-sample store, the sanity battery and the run's environment.

`robench.evaluation.suites` imports no torch, so suites validate without it; `evaluate` and
`EvalRequest` are loaded on first use.

May import: `robench.tasks`, `robench.perturbations`, `robench.models`, `robench.data`,
`robench.diagnostics`, `robench.results`, `robench._core`.
"""

from __future__ import annotations

from robench._core.lazy import lazy_exports

_LAZY = {"EvalRequest": "robench.evaluation.request", "evaluate": "robench.evaluation.request"}

__all__ = list(_LAZY)
__getattr__ = lazy_exports(__name__, _LAZY)
