"""Suites: declarative TOML files listing the perturbations of one evaluation.

A suite is data, not code: each entry names a registered perturbation `kind` and its
parameters in pixel units. The shipped suites live in `attacks/`; a path to a file works too,
and a suite may include another (robench/evaluation/suite_files.py). See docs/formats.md for
the format.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from robench._core.errors import ConfigError
from robench._core.registry import did_you_mean
from robench._core.toml_files import describe_validation_error, validate_toml_model
from robench._core.units import display_pixel_value, parse_pixel_value
from robench.diagnostics.params import DIAGNOSTICS, DiagnosticParams
from robench.evaluation.suite_files import bundled_suites as bundled_suites  # re-exported
from robench.evaluation.suite_files import close_match, read_suite_file, resolve_suite_path
from robench.perturbations import PERTURBATIONS
from robench.perturbations.base import Perturbation, PerturbationParams

if TYPE_CHECKING:  # torch-free here: `robench validate` reads suites
    from robench.models.loaded_model import LoadedModel


class _Entry(BaseModel):
    """A suite table naming a registered `kind`; keys not declared here are its parameters."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str  # a registered kind (`robench list perturbations`)
    name: str | None = None  # unique label in reports; defaults to the kind

    @property
    def label(self) -> str:
        return self.name or self.kind

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class PerturbationEntry(_Entry):
    """One `[[perturbations]]` table."""

    max_samples: int | None = Field(default=None, gt=0)  # evaluate only the first N samples
    # Which of the request's named datasets to run on (`--data NAME=PATH`); default: the first.
    dataset: str | None = None
    # A label space (docs/formats.md, "Which data an entry runs on").
    classes: str | None = None
    # Adaptive attack: gradients through the model's input-dependent internals (Elliptical M).
    differentiable_m: bool = False
    # Transfer attack: the MODEL its images are crafted on (docs/formats.md, "Transfer attacks").
    surrogate: str | None = None
    # The surrogate's weights; a relative path is relative to the suite file.
    surrogate_checkpoint: str | None = None

    @model_validator(mode="after")
    def _surrogate_checkpoint_needs_a_surrogate(self) -> PerturbationEntry:
        if self.surrogate_checkpoint is not None and self.surrogate is None:
            raise ValueError(
                f"entry {self.label!r} gives surrogate_checkpoint without surrogate; name the "
                'surrogate model too, e.g. surrogate = "vit_nano_fmnist"'
            )
        return self


@dataclass(frozen=True, eq=False)
class SurrogateRef:
    """The model a transfer attack is crafted on: a MODEL and its checkpoint (None: the
    model's own weights), or a model held in memory, wrapped already, named `model`."""

    model: str
    checkpoint: Path | None = None
    # The model held in memory, as robench.evaluate wrapped it; None for a MODEL to load.
    loaded: LoadedModel | None = None

    def _key(self) -> tuple[str, Path | None, int | None]:
        # A model held in memory is itself: never the same as a MODEL of the same name.
        return (self.model, self.checkpoint, None if self.loaded is None else id(self.loaded))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SurrogateRef) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def describe(self) -> str:
        if self.loaded is not None:
            return f"{self.model} (in memory)"
        return self.model + (f" ({self.checkpoint})" if self.checkpoint else "")


class DatasetDeclaration(BaseModel):
    """A `[datasets.NAME]` table: a dataset the suite's entries may name (`dataset = NAME`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # How to read it (`docs/datasets.md`): e.g. "imagenet-a"; None detects the layout.
    layout: str | None = None
    # When not given on the command line, its entries are listed as missing, not an error.
    optional: bool = False
    description: str = ""  # what to pass, shown when it is missing


class DiagnosticEntry(_Entry):
    """One `[[diagnostics]]` table: a perturbation-free measurement (collapse, efficiency...)."""


class Suite(BaseModel):
    """A versioned list of perturbations; bump `version` whenever a change moves numbers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str  # identifier, usually the file name without .toml
    version: int = Field(ge=1)  # bump when a change moves the numbers
    description: str = ""  # one line for `robench list suites`
    task: str = "image-classification"  # the task its models solve (`robench list tasks`)
    # Listed samples of the default dataset (a shipped subset name or a file); --subset wins.
    subset: str | None = None
    # Metrics reported per perturbation; not given: the task's defaults (`robench list tasks`).
    metrics: tuple[str, ...] = ()
    # Numbers over groups of results, e.g. "mce" (results/stats/aggregates.py).
    aggregates: tuple[str, ...] = ()
    # Datasets the entries name, with their layouts; "default" is the unnamed `--data PATH`.
    datasets: dict[str, DatasetDeclaration] = Field(default_factory=dict)
    perturbations: tuple[PerturbationEntry, ...] = ()
    diagnostics: tuple[DiagnosticEntry, ...] = ()  # run once on `diagnostics_samples` images
    diagnostics_samples: int = Field(default=256, gt=0)
    sanity: bool = False  # also run the sanity battery (as `robench eval --sanity`)
    # As `robench eval --target-halfwidth`, which wins (docs/sequential.md).
    target_halfwidth: float | None = Field(default=None, ge=0, le=0.5)
    sanity_eps: float | None = None  # its budget; default: the largest eps of its threat model
    sanity_samples: int = Field(default=200, gt=0)  # samples the battery runs on
    # docs/sanity.md; `robench eval --sanity-budget` wins; None: "auto".
    sanity_budget: Literal["auto", "full", "quick"] | None = None
    # Attacks under `robench eval --amp` too, not float32 (docs/formats.md, "Speed modes").
    amp_attacks: bool = False
    # Options of the task's data (`robench list tasks`); the flags of the same name win.
    data_options: dict[str, int | str] = Field(default_factory=dict)

    @field_validator("sanity_eps", mode="before")
    @classmethod
    def _parse_sanity_eps(cls, value: Any) -> float | None:
        try:
            return None if value is None else parse_pixel_value(value, "sanity_eps")
        except ConfigError as exc:  # a ValueError, so the message names the suite file
            raise ValueError(str(exc).rstrip(".")) from None

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str) -> str:
        from robench.tasks import TASKS

        if task not in TASKS:
            raise ValueError(did_you_mean(task, TASKS.names(), "task"))
        return task

    @model_validator(mode="before")
    @classmethod
    def _task_metrics(cls, values: Any) -> Any:
        """A suite that names no metrics reports its task's default ones, then those only its
        kinds can fill (a randomized-smoothing entry's certificates)."""
        from robench.tasks import TASKS

        if isinstance(values, dict) and not values.get("metrics"):
            task = values.get("task", "image-classification")
            if isinstance(task, str) and task in TASKS:  # else the field's check says why
                metrics = TASKS.get(task).default_metrics + _kinds_metrics(values, task)
                values = {**values, "metrics": tuple(dict.fromkeys(metrics))}
        return values

    @model_validator(mode="after")
    def _known_metrics(self) -> Suite:
        from robench.results.stats.metrics import (  # fail now, not post-run
            METRICS,
            metrics_for_task,
        )

        for name in self.metrics:
            if name not in METRICS:
                raise ValueError(did_you_mean(name, METRICS.names(), "metric"))
            metric = METRICS.get(name)
            if not metric.applies_to(self.task):
                # e.g. "metric 'ece' needs class probabilities per sample, which
                # language-modeling records do not keep (it is for image-classification ...)"
                why = (
                    f"needs {metric.needs}, which {self.task} records do not keep (it is for "
                    f"{metric.tasks_text} models)"
                    if metric.needs
                    else f"is for {metric.tasks_text} models, not {self.task}"
                )
                raise ValueError(
                    f"metric {name!r} {why}; drop it from the suite's metrics (this task's "
                    f"metrics: {', '.join(metrics_for_task(self.task))})"
                )
        return self

    @model_validator(mode="after")
    def _known_aggregates(self) -> Suite:
        from robench.results.stats.aggregates import AGGREGATES  # torch-free

        for name in self.aggregates:
            if name not in AGGREGATES:
                raise ValueError(did_you_mean(name, AGGREGATES.names(), "aggregate"))
            task = AGGREGATES.get(name).task
            if task != self.task:
                fitting = [n for n in AGGREGATES.names() if AGGREGATES.get(n).task == self.task]
                raise ValueError(
                    f"aggregate {name!r} reads {task} results, not {self.task}; this task's "
                    f"aggregates: {', '.join(fitting) or 'none'}"
                )
        return self

    @model_validator(mode="after")
    def _check_entries(self) -> Suite:
        if not self.perturbations and not self.diagnostics:
            raise ValueError("a suite needs at least one [[perturbations]] or [[diagnostics]]")
        kinds: list[tuple[_Entry, Any, str]]
        kinds = [(e, PERTURBATIONS, "perturbation") for e in self.perturbations]
        kinds += [(e, DIAGNOSTICS, "diagnostic") for e in self.diagnostics]
        for entry, registry, what in kinds:
            tasks = _tasks_of(registry.get(entry.kind).Params) if entry.kind in registry else None
            if tasks is not None and self.task not in tasks:
                shown = " and ".join(tasks)
                raise ValueError(
                    f"{what} {entry.label!r} ({entry.kind}) applies to {shown} models, but "
                    f'the suite\'s task is {self.task}; set `task = "{tasks[0]}"` or use a '
                    f"{what} for {self.task} (`robench list {what}s`)"
                )
        return self


@dataclass(frozen=True)
class PlannedPerturbation:
    """A suite entry with its parameters validated; the perturbation itself (torch, attack
    libraries) is built on first use, so validating a suite imports neither."""

    label: str
    kind: str
    params: PerturbationParams
    max_samples: int | None
    differentiable_m: bool = False
    dataset: str | None = None  # a named dataset of the request; None: the first one
    classes: str | None = None  # label space (shipped list or wnid file); None: all classes
    # Transfer: the model the attack runs on (the evaluated model scores its images); None:
    # the evaluated model itself (white-box).
    surrogate: SurrogateRef | None = None

    @functools.cached_property
    def perturbation(self) -> Perturbation:
        return PERTURBATIONS.get(self.kind).load()(self.params)

    @property
    def eps(self) -> float | None:
        return getattr(self.params, "eps", None)  # type: ignore[no-any-return]

    @property
    def norm(self) -> str | None:
        """The threat model (a key of NORMS) of a bounded perturbation; None if unbounded."""
        return getattr(self.params, "norm", None) if self.eps is not None else None

    def report_params(self) -> dict[str, Any]:
        """Parameters as the report records them: numbers, plus display forms of pixel values;
        a bounded perturbation also records its `norm` and `budget_display` ("Linf 8/255")."""
        from robench.perturbations.threat_models import NORMS  # torch-free

        params = self.params.model_dump()
        for key in self.params.report_omits_none:
            if params.get(key) is None:
                params.pop(key, None)
        for key in ("eps", "step_size"):
            if isinstance(params.get(key), float):
                params[f"{key}_display"] = display_pixel_value(params[key])
        if self.eps is not None and self.norm is not None:
            params["budget_display"] = NORMS[self.norm].budget_display(self.eps)
        if self.params.unbounded:
            params["threat_model"] = params["budget_display"] = "unbounded"
        params.update(self.params.report_fields())
        for key in ("max_samples", "differentiable_m", "classes"):  # only when set
            if getattr(self, key) not in (None, False):
                params[key] = getattr(self, key)
        if self.surrogate is not None:  # the run adds the loaded surrogate's provenance
            checkpoint = self.surrogate.checkpoint
            params["surrogate"] = {
                "name": self.surrogate.model,
                "checkpoint": None if checkpoint is None else str(checkpoint),
            }
        return params


@dataclass(frozen=True)
class PlannedDiagnostic:
    """A `[[diagnostics]]` entry with validated parameters; built (torch) on first use."""

    label: str
    kind: str
    params: DiagnosticParams

    @functools.cached_property
    def diagnostic(self) -> Any:  # robench.diagnostics.Diagnostic
        return DIAGNOSTICS.get(self.kind).load()(self.params)

    def report_params(self) -> dict[str, Any]:
        return dict(self.params.model_dump())


@dataclass(frozen=True)
class LoadedSuite:
    suite: Suite
    path: Path
    sha256: str
    plan: tuple[PlannedPerturbation, ...]
    diagnostics: tuple[PlannedDiagnostic, ...] = ()
    includes: tuple[Path, ...] = ()  # the suite files it includes, nearest first


def _unknown_keys(entry: _Entry, exc: Exception, registry: Any) -> str | None:
    """'unknown key 'epsilon' (did you mean 'eps'?)' when validation failed on keys the kind
    does not take: the real cause, rather than the required key it then misses."""
    if not isinstance(exc, ValidationError) or entry.kind not in registry:
        return None
    unknown = [str(error["loc"][0]) for error in exc.errors() if error["type"] == "extra_forbidden"]
    if not unknown:
        return None
    schema = registry.get(entry.kind).Params
    known = [*schema.model_fields, *type(entry).model_fields]
    parts = [f"{key!r}{close_match(key, known)}" for key in unknown]
    fields = ", ".join(name for name in schema.model_fields if not name.startswith("_"))
    return f"unknown key {', '.join(parts)}; {entry.kind} takes {fields}"


def _describe_entry_error(
    suite_path: Path, label: str, exc: Exception, unknown: str | None = None
) -> ConfigError:
    detail = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
    detail = unknown or detail.rstrip(".")
    return ConfigError(
        f"suite file {suite_path}, entry {label!r}: {detail}; see `robench list "
        "perturbations` and docs/formats.md for parameters."
    )


def plan_diagnostic(entry: DiagnosticEntry, suite_path: Path) -> PlannedDiagnostic:
    try:
        params = DIAGNOSTICS.get(entry.kind).Params.model_validate(entry.params)
        return PlannedDiagnostic(entry.label, entry.kind, params)
    except (ValidationError, ConfigError) as exc:
        unknown = _unknown_keys(entry, exc, DIAGNOSTICS)
        raise _describe_entry_error(suite_path, entry.label, exc, unknown) from None


def _surrogate_ref(entry: PerturbationEntry, suite_path: Path) -> SurrogateRef | None:
    """The entry's surrogate, its checkpoint relative to the suite file (as a model card's)."""
    if entry.surrogate is None or entry.surrogate_checkpoint is None:
        return None if entry.surrogate is None else SurrogateRef(entry.surrogate)
    checkpoint = Path(entry.surrogate_checkpoint).expanduser()
    if not checkpoint.is_absolute() and suite_path != PYTHON_SUITE_PATH:
        checkpoint = suite_path.parent / checkpoint
    return SurrogateRef(entry.surrogate, checkpoint)


def _tasks_of(params: Any) -> tuple[str, ...] | None:
    """The tasks a kind's parameters (`Params.task`) apply to; None: every task."""
    return (params.task,) if isinstance(params.task, str) else params.task


def _kinds_metrics(values: Mapping[str, Any], task: str) -> tuple[str, ...]:
    """The metrics the suite's known kinds of `task` bring (`PerturbationParams.metrics`), in
    order; a kind of another task brings none (the suite's check of kinds says why)."""
    entries = values.get("perturbations")
    found: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        kind = entry.get("kind") if isinstance(entry, Mapping) else None
        if isinstance(kind, str) and kind in PERTURBATIONS:
            params = PERTURBATIONS.get(kind).Params
            tasks = _tasks_of(params)
            found += params.metrics if tasks is None or task in tasks else ()
    return tuple(found)


def plan_entry(entry: PerturbationEntry, suite_path: Path) -> list[PlannedPerturbation]:
    """The entry's planned results: one, or one per grid point (corruptions x severities)."""
    try:
        schema = PERTURBATIONS.get(entry.kind).Params
        grid = schema.expand_grid(entry.name, entry.params)
        validated = [(label, schema.model_validate(params)) for label, params in grid]
    except (ValidationError, ConfigError, ValueError) as exc:
        unknown = _unknown_keys(entry, exc, PERTURBATIONS)
        raise _describe_entry_error(suite_path, entry.label, exc, unknown) from None
    surrogate = _surrogate_ref(entry, suite_path)
    shared = (entry.max_samples, entry.differentiable_m, entry.dataset, entry.classes, surrogate)
    return [
        PlannedPerturbation(label or entry.kind, entry.kind, p, *shared) for label, p in validated
    ]


def _planned(
    suite: Suite, path: Path
) -> tuple[tuple[PlannedPerturbation, ...], tuple[PlannedDiagnostic, ...]]:
    """The suite's entries planned, each label used once."""
    plan = tuple(planned for entry in suite.perturbations for planned in plan_entry(entry, path))
    diagnostics = tuple(plan_diagnostic(entry, path) for entry in suite.diagnostics)
    seen: set[str] = set()
    for label in [p.label for p in plan] + [d.label for d in diagnostics]:
        if label in seen:
            raise ConfigError(
                f"suite file {path}: two perturbations or diagnostics are named "
                f"{label!r}; give each entry its own `name`."
            )
        seen.add(label)
    return plan, diagnostics


def load_suite(name_or_path: str) -> LoadedSuite:
    """Read, validate and plan a suite; every problem is one ConfigError sentence."""
    path = resolve_suite_path(name_or_path)
    source = read_suite_file(path)  # its includes resolved (robench/evaluation/suite_files.py)
    suite = validate_toml_model(source.data, Suite, "suite", source.describe(path))
    plan, diagnostics = _planned(suite, path)
    return LoadedSuite(suite, path, source.sha256, plan, diagnostics, source.includes)


# What the report gives as the path of a suite built in Python.
PYTHON_SUITE_PATH = Path("<python>")


def suite_from_data(
    data: Mapping[str, Any] | Sequence[Mapping[str, Any]], task: str
) -> LoadedSuite:
    """A suite built in Python (`robench.evaluate(suite=...)`), validated as a TOML file is:
    a dict of the file's shape, or a list of its `[[perturbations]]` entries (then named
    "python", version 1, for `task`). Its sha256 is over its canonical JSON."""
    if isinstance(data, Mapping):
        raw: dict[str, Any] = dict(data)
    else:
        raw = {"name": "python", "version": 1, "task": task, "perturbations": list(data)}
    try:
        suite = Suite.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(
            f"the suite given in Python is invalid: {describe_validation_error(exc)}; see "
            "docs/formats.md for the suite format."
        ) from None
    plan, diagnostics = _planned(suite, PYTHON_SUITE_PATH)
    canonical = json.dumps(suite.model_dump(mode="json"), sort_keys=True, default=str)
    sha256 = hashlib.sha256(canonical.encode()).hexdigest()
    return LoadedSuite(suite, PYTHON_SUITE_PATH, sha256, plan, diagnostics)
