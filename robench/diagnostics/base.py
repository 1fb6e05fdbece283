"""The diagnostic contract and the registry every diagnostic kind lives in.

A diagnostic is a perturbation-free measurement of a model on a small batch of clean inputs
(images, or a language model's token ids); it returns JSON-ready numbers plus the figures it
wrote. The inputs each task gives and the guarantees: docs/diagnostics.md, "Inputs".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from robench._core.batching import batch_indices
from robench._core.errors import ConfigError, DataError
from robench.diagnostics.params import DIAGNOSTICS, DiagnosticParams


@dataclass(frozen=True)
class DiagnosticOutput:
    """What a diagnostic returns: numbers for the report and the files it wrote."""

    values: dict[str, Any]  # JSON numbers and (nested) lists of numbers; units in key names
    files: list[Path] = field(default_factory=list)  # figures written under `out_dir`


class Diagnostic:
    """Base class; subclasses set `Params` and implement `measure` (or `run`)."""

    Params: ClassVar[type[DiagnosticParams]] = DiagnosticParams

    def __init__(self, params: DiagnosticParams | None = None) -> None:
        self.params = params if params is not None else self.Params()

    def run(
        self,
        model: nn.Module,
        images: torch.Tensor,
        *,
        out_dir: Path | None = None,
        title: str | None = None,
    ) -> DiagnosticOutput:
        """Measure `model` on `images` ((B, C, H, W) floats in [0, 1], or a language model's
        token ids (B, T)); write figures under `out_dir` when given, titled with `title` (the
        model's name). A ConfigError when the model lacks what the diagnostic needs (e.g.
        transformer blocks) or the diagnostic does not apply to the inputs' task; a DataError
        for inputs that are neither kind of non-empty batch."""
        return self.measure(model, images, out_dir, title)

    def measure(
        self, model: nn.Module, images: torch.Tensor, out_dir: Path | None, title: str | None
    ) -> DiagnosticOutput:
        """What `run` returns, the arguments as `run` was given them; a diagnostic overrides
        this one (or `run` itself, as diagnostics written before `measure` do)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither measure nor run")


def build_diagnostic(kind: str, params: Mapping[str, Any] | None = None) -> Diagnostic:
    """Validate `params` against the kind's schema (else a pydantic.ValidationError) and build
    the diagnostic; an unregistered `kind` is a ConfigError suggesting close names."""
    entry = DIAGNOSTICS.get(kind)
    cls: type[Diagnostic] = entry.load()
    return cls(entry.Params.model_validate(dict(params or {})))


# ---------------------------------------------------------------------------------------------
# Helpers every diagnostic runs the model with.


def is_token_batch(inputs: torch.Tensor) -> bool:
    """True for a language model's token ids: an integer (not bool) tensor (B, T)."""
    return (
        inputs.dim() == 2
        and not inputs.is_floating_point()
        and not inputs.is_complex()
        and inputs.dtype != torch.bool
    )


def sample_noun(inputs: torch.Tensor) -> str:
    """What figures and logs call the samples of `inputs`: "windows" (token ids) or "images"."""
    return "windows" if is_token_batch(inputs) else "images"


def _check_tensor(inputs: object) -> torch.Tensor:
    if not isinstance(inputs, torch.Tensor):
        raise DataError(f"diagnostics take a torch.Tensor of inputs, got {type(inputs).__name__}.")
    return inputs


def check_inputs(inputs: object) -> torch.Tensor:
    """Return `inputs` if it is a non-empty batch of images, floating (B, C, H, W), or of token
    ids, integer (B, T) with T >= 1; else raise DataError."""
    inputs = _check_tensor(inputs)
    if inputs.shape[0] > 0 and is_token_batch(inputs) and inputs.shape[1] > 0:
        return inputs
    if inputs.dim() != 4 or inputs.shape[0] == 0 or not inputs.is_floating_point():
        raise DataError(
            f"diagnostics take a non-empty float batch of images of shape (B, C, H, W) in "
            f"[0, 1], or of token ids of shape (B, T), got dtype {inputs.dtype} and shape "
            f"{tuple(inputs.shape)}; stack the samples first."
        )
    return inputs


def check_images(images: object, purpose: str = "this diagnostic") -> torch.Tensor:
    """Return `images` if it is a non-empty floating (B, C, H, W) tensor; token ids (B, T) are a
    ConfigError (`purpose` applies to image models only), anything else a DataError."""
    images = _check_tensor(images)
    if is_token_batch(images):
        raise ConfigError(
            f"{purpose} applies to image classifiers only, but got token ids of shape "
            f"{tuple(images.shape)} from a language model; remove it from the language-modeling "
            "suite's [[diagnostics]] (collapse, head_redundancy and efficiency apply to both)."
        )
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
    inputs: torch.Tensor, batch_size: int, device: torch.device
) -> Iterator[torch.Tensor]:
    """Consecutive slices of `inputs` (images or token ids) of at most `batch_size` samples,
    moved to `device` with their dtype unchanged."""
    for batch in batch_indices(range(inputs.shape[0]), batch_size):
        yield inputs[batch[0] : batch[-1] + 1].to(device)


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
