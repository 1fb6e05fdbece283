"""robench.registry: the one home of every `register_*` a plugin calls, whatever part of
robench keeps the registry (`_LAZY` names it). What each registers, and how implementations
that may import torch are registered by path: docs/extending.md, "One registry module".

Names are loaded on first use (PEP 562), so importing this module imports none of those
parts. Part of the top layer, beside `cli`: nothing inside robench imports it.

May import: the parts whose registries it fronts (`robench.tasks`, `robench.perturbations`,
`robench.diagnostics`, `robench.models`, `robench.data`, `robench.results`, `robench._core`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from robench._core.lazy import lazy_exports

if TYPE_CHECKING:
    from robench.data import LabeledImages as LabeledImages
    from robench.data import Layout as Layout
    from robench.data import register_layout as register_dataset
    from robench.diagnostics.params import register_diagnostic as register_diagnostic
    from robench.models.loaded_model import LoadedModel as LoadedModel
    from robench.models.sources.registry import SourceRequest as SourceRequest
    from robench.models.sources.registry import register_source as register_source
    from robench.models.zoo.lm_registry import register_language_model as register_language_model
    from robench.perturbations.base import BoundedParams as BoundedParams
    from robench.perturbations.base import Perturbation as Perturbation
    from robench.perturbations.base import PerturbationParams as PerturbationParams
    from robench.perturbations.base import SamplePerturbation as SamplePerturbation
    from robench.perturbations.base import register_kind as register_perturbation
    from robench.results.report.output_formats import OutputFormat as OutputFormat
    from robench.results.stats.aggregates import register as register_aggregate
    from robench.results.stats.metrics import Metric as Metric
    from robench.results.stats.metrics import MetricDisplay as MetricDisplay
    from robench.results.stats.metrics import register as register_metric
    from robench.tasks.base import Task as Task
    from robench.tasks.registry import register_task as register_task

_LAZY = {
    # The registrations.
    "register_perturbation": "robench.perturbations.base:register_kind",
    "register_metric": "robench.results.stats.metrics:register",
    "register_task": "robench.tasks.registry:register_task",
    "register_source": "robench.models.sources.registry:register_source",
    "register_dataset": "robench.data:register_layout",
    "register_diagnostic": "robench.diagnostics.params:register_diagnostic",
    "register_aggregate": "robench.results.stats.aggregates:register",
    "register_language_model": "robench.models.zoo.lm_registry:register_language_model",
    # What they take, and the classes an implementation subclasses.
    "Metric": "robench.results.stats.metrics",
    "MetricDisplay": "robench.results.stats.metrics",
    "PerturbationParams": "robench.perturbations.base",
    "BoundedParams": "robench.perturbations.base",
    "Perturbation": "robench.perturbations.base",
    "SamplePerturbation": "robench.perturbations.base",
    "Task": "robench.tasks.base",
    "SourceRequest": "robench.models.sources.registry",
    "LoadedModel": "robench.models.loaded_model",
    "LabeledImages": "robench.data",
    "Layout": "robench.data",
    "OutputFormat": "robench.results.report.output_formats",
}

# The modules that register robench's own formats of each kind: imported before a plugin's
# format is added, so that a plugin reusing a built-in name is refused at once.
_BUILT_IN_FORMATS = {
    "report": "robench.results.compare.tables",
    "compare": "robench.results.compare.formats",
    "per-corruption": "robench.results.compare.per_corruption",
    "gate": "robench.results.gate.formats",
}


def register_format(
    kind: str, name: str, *suffixes: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: add the rendering function as output format `name` of `kind` ("report",
    "compare", "per-corruption" or "gate"; what each renders and how it is called:
    robench/results/report/output_formats.py), written to files with `suffixes` (".md").

    `robench compare --format NAME` (and `--output FILE.SUFFIX`) then offers a compare format;
    `--per-corruption --format NAME` a per-corruption one."""
    from robench.results.report.output_formats import format_registry
    from robench.results.report.output_formats import register_format as register

    format_registry(kind)  # an unknown kind is one sentence naming the kinds
    importlib.import_module(_BUILT_IN_FORMATS[kind])
    return register(kind, name, *suffixes)


__all__ = [
    "BoundedParams",
    "LabeledImages",
    "Layout",
    "LoadedModel",
    "Metric",
    "MetricDisplay",
    "OutputFormat",
    "Perturbation",
    "PerturbationParams",
    "SamplePerturbation",
    "SourceRequest",
    "Task",
    "register_aggregate",
    "register_dataset",
    "register_diagnostic",
    "register_format",
    "register_language_model",
    "register_metric",
    "register_perturbation",
    "register_source",
    "register_task",
]

__getattr__ = lazy_exports(__name__, _LAZY)
