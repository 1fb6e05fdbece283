"""The diagnostic contract and the registry every diagnostic kind lives in.

A diagnostic is a perturbation-free measurement of a model on a small batch of clean inputs,
reproducing the paper's analyses (Elliptical Attention, NeurIPS 2024): representation collapse
(Fig. 3 and 6), head redundancy (Table 18), efficiency (Tables 11-12) and CLS attention maps
(Fig. 1). It takes the model a task evaluates and a batch of that task's inputs:

- image classification: a pixel-space classifier (normalisation inside, normally a
  `NormalizedModel` wrapping a timm ViT) and images, float in [0, 1] of shape (B, C, H, W);
- language modelling: a causal language model (robench's `TransformerLM`: timm blocks, no class
  token) and token ids, an integer tensor (B, T) of B windows of T tokens each.

It returns JSON-ready numbers plus the figures it wrote. Diagnostics run the model in eval mode
without gradients and restore the model's train/eval flags afterwards. `check_inputs` accepts
both kinds of batch; diagnostics that only make sense on images (the CLS attention maps) call
`check_images`, which rejects token ids with a ConfigError.
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
        """Measure `model` on `images`: images (B, C, H, W), float in [0, 1], or token ids
        (B, T) of a language model (see the module docstring); write figures under `out_dir`
        when it is given, titled with `title` (the model's name).

        Raises:
            ConfigError: the model lacks what the diagnostic needs (e.g. transformer blocks),
                or the diagnostic does not apply to the inputs' task.
            DataError: `images` is neither a non-empty (B, C, H, W) floating-point batch nor a
                non-empty (B, T) batch of token ids.
        """
        return self.measure(model, images, out_dir, title)

    def measure(
        self, model: nn.Module, images: torch.Tensor, out_dir: Path | None, title: str | None
    ) -> DiagnosticOutput:
        """What `run` returns, the arguments as `run` was given them; a diagnostic overrides
        this one (or `run` itself, as diagnostics written before `measure` do)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither measure nor run")


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
    """Return `images` if it is a non-empty floating (B, C, H, W) tensor.

    Raises:
        ConfigError: `images` are token ids (B, T): `purpose` applies to image models only.
        DataError: any other tensor that is not a batch of images.
    """
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
