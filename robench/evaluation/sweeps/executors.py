"""Executors: what runs a sweep's jobs. One registry, `EXECUTORS`; `local` and `slurm` are
built in, and a plugin adds another by registering a subclass of `Executor` (docs/sweeps.md,
"A third executor: a plugin").
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from robench._core.errors import ConfigError
from robench._core.registry import Registry
from robench._core.toml_files import describe_validation_error
from robench.evaluation.sweeps.jobs import SweepJob
from robench.evaluation.sweeps.plan import Resources
from robench.evaluation.sweeps.state import JobState

__all__ = ["EXECUTORS", "Executor", "build_executor", "load_executors"]

ENTRY_POINT_GROUP = "robench.executors"
# The built-in executors' modules: each registers itself on import.
_BUILT_IN = ("robench.evaluation.sweeps.local", "robench.evaluation.sweeps.slurm")


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Executor(abc.ABC):
    """Runs a sweep's jobs; subclass, set `Options` and register it in `EXECUTORS`."""

    Options: ClassVar[type[BaseModel]] = NoOptions  # the plan's [executors.NAME] table
    description: ClassVar[str] = ""  # one line for `robench sweep --help` and the docs

    def __init__(self, name: str, resources: Resources, options: BaseModel, folder: Path):
        self.name = name
        self.resources = resources
        self.options = options
        self.folder = folder  # the sweep's folder: the executor may keep its files there

    def check(self, jobs: list[SweepJob]) -> None:  # noqa: B027 (optional to override)
        """Raise a ConfigError for resources or options this executor cannot honour."""

    @abc.abstractmethod
    def run(self, jobs: list[SweepJob], *, wait: bool) -> None:
        """Run (or submit) every job with `run_job`; with `wait`, return once all ended."""

    def alive(self, state: JobState) -> bool | None:
        """Whether a job this executor started (state pending or running) still is; None
        when it cannot tell."""
        return None


EXECUTORS: Registry[type[Executor]] = Registry("executor")


def load_executors(imports: list[str] | tuple[str, ...] = ()) -> None:
    """Register the built-in executors, the installed plugins' and the plan's `imports`."""
    from robench._core.plugins import import_user_module, load_plugins

    for module in _BUILT_IN:
        import_user_module(module)
    load_plugins(imports, (ENTRY_POINT_GROUP,))


def build_executor(
    name: str, resources: Resources, options: dict[str, object], folder: Path
) -> Executor:
    """The named executor with its options from the plan, validated."""
    cls = EXECUTORS.get(name)
    try:
        parsed = cls.Options.model_validate(options)
    except ValidationError as exc:
        raise ConfigError(
            f"the plan's [executors.{name}] is invalid: {describe_validation_error(exc)}; see "
            "docs/sweeps.md."
        ) from None
    return cls(name, resources, parsed, folder)
