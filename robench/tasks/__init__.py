"""Tasks: what a model is asked to do, and everything that depends on it.

A task (`image-classification`, `language-modeling`, `semantic-segmentation`,
`text-classification`, `sequence-classification`: `robench list tasks`) owns how a
batch is collated, how the model is run and scored into a per-sample record, which metrics
read those records, and how the model and the data are checked before a run. The runner, the sample
store, the report and the gate call the task and know nothing of labels or top-k.

Importing this package registers the built-in tasks by name and description only (no torch);
`load_task(name)` imports the implementation.

May import: `robench.perturbations`, `robench.diagnostics`, `robench.models`, `robench.data`,
`robench.results`, `robench._core`.
"""

from __future__ import annotations

from robench.tasks.registry import TASKS as TASKS
from robench.tasks.registry import load_task as load_task

__all__ = ["TASKS", "load_task"]
