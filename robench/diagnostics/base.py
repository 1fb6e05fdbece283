"""The diagnostic contract and the registry every diagnostic kind lives in.

A diagnostic is a perturbation-free measurement of a model on a small batch of clean images,
reproducing the paper's analyses (Elliptical Attention, NeurIPS 2024): representation collapse
(Fig. 3 and 6), head redundancy (Table 18), efficiency (Tables 11-12) and CLS attention maps
(Fig. 1). It takes a pixel-space classifier (normalisation inside, input float in [0, 1] of
shape (B, C, H, W), normally a `NormalizedModel` wrapping a timm ViT) and returns JSON-ready
numbers plus the figures it wrote. Diagnostics run the model in eval mode without gradients
and restore the model's train/eval flags afterwards.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from robench._core.batching import batch_indices
from robench._core.errors import DataError
from robench.diagnostics.params import DIAGNOSTICS, DiagnosticParams


@dataclass(frozen=True)
class DiagnosticOutput:
    """What a diagnostic returns: numbers for the report and the files it wrote."""

    values: dict[str, Any]  # JSON numbers and (nested) lists of numbers; units in key names
    files: list[Path] = field(default_factory=list)  # figures written under `out_dir`


class Diagnostic(abc.ABC):
    """Base class; subclasses set `Params` and implement `run`."""

    Params: ClassVar[type[DiagnosticParams]] = DiagnosticParams

    def __init__(self, params: DiagnosticParams | None = None) -> None:
        self.params = params if params is not None else self.Params()

    @abc.abstractmethod
    def run(
        self,
        model: nn.Module,
        images: torch.Tensor,
        *,
        out_dir: Path | None = None,
        label: str | None = None,
    ) -> DiagnosticOutput:
        """Measure `model` on `images` ((B, C, H, W), float in [0, 1], on the model's device);
        write figures under `out_dir` when it is given, titled with `label` (the model's name).

        Raises:
            ConfigError: the model lacks what the diagnostic needs (e.g. transformer blocks).
            DataError: `images` is not a non-empty (B, C, H, W) floating-point batch.
        """


def build_diagnostic(kind: str, params: Mapping[str, Any] | None = None) -> Diagnostic:
    """Validate `params` against the kind's schema and build the diagnostic.

    Raises:
        ConfigError: `kind` is not registered (the message suggests close names).
        pydantic.ValidationError: `params` do not fit the kind's `Params`.
    """
    entry = DIAGNOSTICS.get(kind)
    cls: type[Diagnostic] = entry.load()
    return cls(entry.Params.model_validate(dict(params or {})))


# ---------------------------------------------------------------------------------------------
# Helpers every diagnostic runs the model with.


def check_images(images: object) -> torch.Tensor:
    """Return `images` if it is a non-empty floating (B, C, H, W) tensor, else raise DataError."""
    if not isinstance(images, torch.Tensor):
        raise DataError(f"diagnostics take a torch.Tensor of images, got {type(images).__name__}.")
    if images.dim() != 4 or images.shape[0] == 0 or not images.is_floating_point():
        raise DataError(
            f"diagnostics take a non-empty float batch of shape (B, C, H, W) in [0, 1], got "
            f"dtype {images.dtype} and shape {tuple(images.shape)}; stack the images first."
        )
    return images


def model_device(model: nn.Module, default: torch.device) -> torch.device:
    """The device of the model's first parameter or buffer, else `default`."""
    for tensor in (*model.parameters(), *model.buffers()):
        return tensor.device
    return default


def iter_batches(
    images: torch.Tensor, batch_size: int, device: torch.device
) -> Iterator[torch.Tensor]:
    """Consecutive slices of `images` of at most `batch_size`, moved to `device`."""
    for batch in batch_indices(range(images.shape[0]), batch_size):
        yield images[batch[0] : batch[-1] + 1].to(device)


@contextmanager
def inference(model: nn.Module) -> Iterator[nn.Module]:
    """Eval mode and no gradients for the duration; every module's train flag is restored."""
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        for module, training in modes:
            module.training = training
