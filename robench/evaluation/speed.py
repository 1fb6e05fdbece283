"""Opt-in speed modes of `robench eval`: mixed precision, channels-last memory, torch.compile,
and TF32 (docs/formats.md, "Speed modes" and "Device and precision": what each touches, why
attacks stay float32, and which modes enter the resume fingerprint).

This module imports torch inside its functions: the command line reads `AMP_DTYPES` for its
choices without loading torch.
"""

from __future__ import annotations

import logging
import warnings
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

from robench._core.errors import ConfigError, first_line
from robench.results.report.schema import SpeedInfo

if TYPE_CHECKING:
    import torch
    from torch import nn

logger = logging.getLogger(__name__)

# --amp NAME -> the torch dtype autocast computes in.
AMP_DTYPES: dict[str, str] = {"bf16": "bfloat16", "fp16": "float16"}


@dataclass(frozen=True)
class SpeedOptions:
    """The speed modes of a run; the defaults are float32, contiguous memory, eager mode."""

    amp: str | None = None  # a key of AMP_DTYPES: autocast dtype of clean/corruption scoring
    channels_last: bool = False  # NHWC weights and image batches
    compile: bool = False  # torch.compile the model for every pass of the run
    # The suite's `amp_attacks`: attacks, and the scoring of their outputs, under --amp too.
    amp_attacks: bool = False
    tf32: bool = False  # --tf32 (evaluation/fp32_precision.py); IEEE float32 otherwise

    def precision(self, device: torch.device) -> str:
        """The arithmetic of the run, for the report: "fp32", "tf32" (CUDA under --tf32),
        "bf16 autocast" or "fp16 autocast" (--amp; attacks in it only with amp_attacks)."""
        base = "tf32" if self.tf32 and device.type == "cuda" else "fp32"
        if self.amp is None:
            return base
        return f"{self.amp} autocast" + ("" if self.attacks_in_amp else f", attacks {base}")

    @property
    def attacks_in_amp(self) -> bool:
        """Attacks, and the scoring of their outputs, run under autocast, not float32."""
        return self.amp is not None and self.amp_attacks

    def __post_init__(self) -> None:
        if self.amp is not None and self.amp not in AMP_DTYPES:
            raise ConfigError(
                f"--amp {self.amp!r} is not a mixed-precision mode; pass one of "
                f"{', '.join(AMP_DTYPES)}, or leave --amp out for float32."
            )

    def info(self, batch_size_used: int, note: str | None = None) -> SpeedInfo:
        """What the report records: the modes, and the batch size the model ran on."""
        return SpeedInfo(
            amp=self.amp,
            channels_last=self.channels_last,
            compile=self.compile,
            amp_attacks=self.attacks_in_amp,
            batch_size_used=batch_size_used,
            batch_size_note=note,
        )


def check_speed(options: SpeedOptions, device: torch.device, inputs: torch.Tensor) -> None:
    """Refuse, before the run, a mode this device, torch or the model's inputs cannot honour
    (`inputs`: a batch as the task loads it)."""
    if options.amp is not None:
        _check_autocast(options.amp, device)
    if options.channels_last and inputs.dim() != 4:
        raise ConfigError(
            f"--channels-last lays out image batches (B, C, H, W), but this model's batches "
            f"have {inputs.dim()} dimensions (a language model's token ids are (B, T)); drop "
            "--channels-last."
        )
    if options.compile:
        import torch._dynamo

        if not torch._dynamo.is_dynamo_supported():
            raise ConfigError(
                f"--compile needs torch.compile, which torch {torch.__version__} does not "
                "support on this Python; drop --compile or use a Python torch.compile supports."
            )


def _check_autocast(amp: str, device: torch.device) -> None:
    """Run one matrix product under autocast: the result's dtype says whether torch honours
    the mode on this device (torch falls back to float32 with a warning where it does not)."""
    import torch

    dtype = getattr(torch, AMP_DTYPES[amp])
    ones = torch.ones(2, 2, device=device)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.autocast(device.type, dtype=dtype):
                computed = (ones @ ones).dtype
    except (RuntimeError, ValueError) as exc:  # e.g. a GPU without bfloat16
        computed, reason = None, f" ({first_line(exc)})"
    else:
        reason = ""
    if computed != dtype:
        other = [name for name in AMP_DTYPES if name != amp]
        raise ConfigError(
            f"--amp {amp}: torch {torch.__version__} cannot autocast to {AMP_DTYPES[amp]} on "
            f"{device.type}{reason}; pass --amp {other[0]}, or leave --amp out for float32."
        )


def prepare_model(model: nn.Module, options: SpeedOptions, example: torch.Tensor) -> nn.Module:
    """The model the run uses: channels-last weights (in place) and/or compiled. A compiled
    model is tried on `example` (one loaded batch), so a failure is a ConfigError now rather
    than a crash in the middle of the run."""
    import torch

    if options.channels_last:
        model.to(memory_format=torch.channels_last)
    if not options.compile:
        return model
    compiled = torch.compile(model)
    logger.info("compiling the model (torch.compile; the first batch takes longer)")
    try:
        with torch.inference_mode():
            compiled(to_memory_format(options, example))
    except Exception as exc:  # dynamo and inductor raise many kinds, a missing compiler too
        raise ConfigError(
            f"--compile: torch.compile could not compile the model ({first_line(exc)}); drop "
            "--compile (on CPU, torch.compile needs a C++ compiler such as g++)."
        ) from None
    return compiled  # type: ignore[return-value]


def to_memory_format(options: SpeedOptions, inputs: torch.Tensor) -> torch.Tensor:
    """An image batch in the memory layout of the run (channels last under the option)."""
    import torch

    if options.channels_last and inputs.dim() == 4:
        return inputs.contiguous(memory_format=torch.channels_last)
    return inputs


def scoring_precision(
    options: SpeedOptions, device: torch.device, model_free: bool
) -> AbstractContextManager[object]:
    """The precision of one pass: autocast under --amp when the inputs were made without the
    model (`model_free`: clean, corruptions, Word Swap) or the suite asks for attacks in it
    too (`amp_attacks`: the attack and the scoring of its output), float32 otherwise."""
    if options.amp is None or not (model_free or options.attacks_in_amp):
        return nullcontext()
    import torch

    return torch.autocast(device.type, dtype=getattr(torch, AMP_DTYPES[options.amp]))
