"""Parameters of the diagnostics and the kinds they register, importable without torch or
matplotlib: suites validate their `[[diagnostics]]` tables from these alone. Each kind names the
class that implements it, imported when the diagnostic is built.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from robench._core.kinds import LazyKind, kind_registrar
from robench._core.registry import Registry


class DiagnosticParams(BaseModel):
    """Parameters common to every diagnostic; subclasses add their own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # The task whose inputs the diagnostic needs (as a perturbation's `task`); None: any task
    # (image classification and language modelling). The diagnostic raises ConfigError at run
    # time on another task's inputs.
    task: ClassVar[str | None] = None


class BatchedParams(DiagnosticParams):
    """Parameters of a diagnostic that runs the model over the images in batches."""

    batch_size: int = Field(default=32, gt=0)  # images per forward pass (bounds memory)


DIAGNOSTICS: Registry[LazyKind[DiagnosticParams]] = Registry("diagnostic")
register_diagnostic = kind_registrar(DIAGNOSTICS)


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

    task: ClassVar[str | None] = "image-classification"  # CLS attention over a patch grid

    n_images: int = Field(default=4, gt=0)  # the first n images are drawn (all are measured)
