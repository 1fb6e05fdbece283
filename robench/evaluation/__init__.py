"""An evaluation end to end: the request and `evaluate`, suites, the runner (batching,
seeding, resume), the per-sample store, the sanity battery and the run's environment.

May import: `robench.tasks`, `robench.perturbations`, `robench.models`, `robench.data`,
`robench.diagnostics`, `robench.results`, `robench._core`.
"""

from robench.evaluation.evaluate import EvalRequest as EvalRequest
from robench.evaluation.evaluate import evaluate as evaluate

__all__ = ["EvalRequest", "evaluate"]
