"""IEEE float32 or TF32 for CUDA matrix products and convolutions while robench evaluates
(why: docs/formats.md, "Device and precision", "IEEE float32 unless `--tf32`").

torch >= 2.9 has `fp32_precision` switches ("ieee", "tf32" or "none": inherit) and refuses a
mix of them with the older `allow_tf32` booleans in one process, so only the newer are set
where they exist. The flags are process-wide and cost nothing on a CPU: set on every device.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

# precision name -> the value each generation's switch takes for it.
_NEW_VALUES = {"fp32": "ieee", "tf32": "tf32"}
_OLD_VALUES = {"fp32": False, "tf32": True}


def _switches() -> tuple[dict[str, tuple[Any, str]], dict[str, Any]]:
    """This torch's switches, by dotted name, as (object, attribute), and their values."""
    cuda, cudnn = torch.backends.cuda, torch.backends.cudnn
    if hasattr(cudnn, "conv") and hasattr(cudnn.conv, "fp32_precision"):
        return {
            "torch.backends.cuda.matmul.fp32_precision": (cuda.matmul, "fp32_precision"),
            "torch.backends.cudnn.conv.fp32_precision": (cudnn.conv, "fp32_precision"),
            "torch.backends.cudnn.rnn.fp32_precision": (cudnn.rnn, "fp32_precision"),
        }, _NEW_VALUES
    return {
        "torch.backends.cuda.matmul.allow_tf32": (cuda.matmul, "allow_tf32"),
        "torch.backends.cudnn.allow_tf32": (cudnn, "allow_tf32"),
    }, _OLD_VALUES


def precision_settings() -> dict[str, Any]:
    """The switches' current values, by dotted name."""
    switches, _ = _switches()
    return {name: getattr(owner, attr) for name, (owner, attr) in switches.items()}


@contextmanager
def float32_precision(tf32: bool = False) -> Iterator[str]:
    """CUDA matmul and convolutions in IEEE float32 (or TF32 when `tf32`) inside the block,
    the caller's settings restored on the way out; yields "fp32" or "tf32"."""
    switches, values = _switches()
    name = "tf32" if tf32 else "fp32"
    saved = precision_settings()
    try:
        for owner, attr in switches.values():
            setattr(owner, attr, values[name])
        yield name
    finally:
        for key, (owner, attr) in switches.items():
            setattr(owner, attr, saved[key])
