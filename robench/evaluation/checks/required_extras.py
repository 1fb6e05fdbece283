"""What an evaluation needs from robench's optional extras, known before it loads anything
(docs/architecture.md, `checks/required_extras.py`); the demo skips the sections that would
need a missing one.
"""

from __future__ import annotations

from collections.abc import Mapping

from robench._core.extras import MissingExtraError, missing_extra
from robench.evaluation.suites import LoadedSuite, load_suite
from robench.models.sources.registry import split_source
from robench.perturbations import PERTURBATIONS
from robench.tasks import load_task


def required_modules(
    model: str | None, loaded_suite: LoadedSuite, datasets: Mapping[str, object] | None = None
) -> dict[str, str]:
    """Module -> what needs it, for evaluating `model` under the suite on `datasets` (None:
    the task's built-in data)."""
    needs: dict[str, str] = {}
    found = split_source(model)
    if found is not None and model is not None:
        source, _ = found
        needs |= {m: f"model {model} (the {source.prefix} source)" for m in source.modules}
    for planned in loaded_suite.plan:
        needs |= PERTURBATIONS.get(planned.kind).Params.modules
    task = load_task(loaded_suite.suite.task)
    for path in (datasets or {"default": task.default_data}).values():
        if isinstance(path, str):  # data held in memory (robench.evaluate) needs no reader
            needs |= task.required_modules(path)
    return needs


def missing_for(
    model: str | None, suite: str | LoadedSuite, datasets: Mapping[str, object] | None = None
) -> MissingExtraError | None:
    """The error naming the first missing module the evaluation needs, or None."""
    loaded = load_suite(suite) if isinstance(suite, str) else suite
    return missing_extra(required_modules(model, loaded, datasets))
