"""Tasks: what a model is asked to do, and everything that depends on it (`robench list tasks`;
the contract: docs/architecture.md, "Task"). The runner, the sample store, the report and the
gate call the task and know nothing of labels or top-k.

Importing this package registers the built-in tasks by name and description only (no torch);
`load_task(name)` imports the implementation.

May import: `robench.perturbations`, `robench.diagnostics`, `robench.models`, `robench.data`,
`robench.results`, `robench._core`.
"""

from __future__ import annotations

from robench.tasks.registry import TASKS as TASKS
from robench.tasks.registry import load_task as load_task

__all__ = ["TASKS", "load_task"]
