"""Parameters of the diagnostics and the kinds they register, importable without torch or
matplotlib: suites validate their `[[diagnostics]]` tables from these alone. Each kind names the
class that implements it, imported when the diagnostic is built.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from robench._core.registry import Registry


class DiagnosticParams(BaseModel):
    """Parameters common to every diagnostic; subclasses add their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class BatchedParams(DiagnosticParams):
    """Parameters of a diagnostic that runs the model over the images in batches."""

    batch_size: int = Field(default=32, gt=0)  # images per forward pass (bounds memory)


@dataclass(frozen=True)
class DiagnosticKind:
    """A registered diagnostic: its parameter schema and where its implementation lives."""

    name: str
    Params: type[DiagnosticParams]
    implementation: str  # "package.module:Class"

    def load(self) -> Any:
        module, _, attribute = self.implementation.partition(":")
        return getattr(importlib.import_module(module), attribute)


DIAGNOSTICS: Registry[DiagnosticKind] = Registry("diagnostic")

P = TypeVar("P", bound=type[DiagnosticParams])


def register_diagnostic(name: str, implementation: str) -> Any:
    """Class decorator on a parameter schema: register diagnostic `name`."""

    def decorate(params: P) -> P:
        DIAGNOSTICS.register(name)(DiagnosticKind(name, params, implementation))
        return params

    return decorate


@register_diagnostic("collapse", "robench.diagnostics.collapse:Collapse")
class CollapseParams(BatchedParams):
    """Which tokens enter the similarity."""

    include_cls: bool = True  # compare the class (and register) tokens too, not only patches


@register_diagnostic("head_redundancy", "robench.diagnostics.redundancy:HeadRedundancy")
class HeadRedundancyParams(BatchedParams):
    """Only the batch size: attention maps are large ((B, H, N, N) per layer)."""


@register_diagnostic("efficiency", "robench.diagnostics.efficiency:Efficiency")
class EfficiencyParams(DiagnosticParams):
    """Timing protocol."""

    batch_size: int = Field(default=32, gt=0)  # images per forward pass (tiled from the input)
    warmup: int = Field(default=3, ge=0)  # untimed forward passes before timing
    iterations: int = Field(default=10, gt=0)  # timed forward passes


@register_diagnostic("attention_maps", "robench.diagnostics.attention_maps:AttentionMaps")
class AttentionMapsParams(BatchedParams):
    """How many images to draw."""

    n_images: int = Field(default=4, gt=0)  # the first n images are drawn (all are measured)
