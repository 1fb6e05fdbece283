"""A transformers image classifier as robench evaluates it: pixels in [0, 1] -> logits.

`PixelValuesClassifier` calls the model with `pixel_values` and returns `.logits`; the
processor's normalisation becomes a `NormalizedModel` around it, so attacks stay in pixel
units. `processor_preprocessing` maps the image processor onto robench's `Preprocessing` (the
table in docs/models.md, "What robench reads from each file"), the processor's rescaling
folded into mean and std; anything else is refused in one sentence.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from robench._core.errors import ConfigError
from robench.models.spec import ModelSpec

# PIL's resampling enum values (transformers stores `resample` as these integers).
_RESAMPLE = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}

# ConvNeXt's processors resize to shortest_edge / crop_pct and crop only below this size.
_CONVNEXT_CROP_BELOW = 384


class PixelValuesClassifier(nn.Module):
    """`model(pixel_values=x).logits` for normalised x of shape (B, C, H, W)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixel_values).logits  # (B, num_labels)


def _size(value: Any, key: str) -> int | None:
    if value is None:
        return None
    found = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
    return int(found) if found else None


def _crop_fraction(crop: tuple[int, int], resized: tuple[int, int], where: str) -> float:
    """A crop_pct that robench's floor(crop / crop_pct) turns back into `resized` exactly."""
    if crop == resized:
        return 1.0
    for candidate in (crop[0] / resized[0], crop[0] / (resized[0] + 0.5)):
        back = tuple(math.floor(c / candidate) for c in crop)
        if back == resized and candidate <= 1.0:
            return candidate
    raise ConfigError(
        f"{where}: the processor crops {crop[0]}x{crop[1]} out of {resized[0]}x{resized[1]}, "
        "which robench cannot express as one crop fraction; pass --input-size and --crop-pct."
    )


def _geometry(processor: Any, where: str) -> tuple[tuple[int, int], float, str]:
    """(height, width) the model takes, crop_pct and resize mode."""
    size = processor.size
    if not getattr(processor, "do_resize", True):
        raise ConfigError(
            f"{where}: the image processor does not resize, so images of different sizes "
            "cannot be batched; pass --input-size C,H,W."
        )
    height, width = _size(size, "height"), _size(size, "width")
    shortest = _size(size, "shortest_edge")
    crop = (
        getattr(processor, "crop_size", None)
        if getattr(processor, "do_center_crop", False)
        else None
    )
    if height and width:
        resized, mode = (height, width), "squash"
    elif shortest and getattr(processor, "crop_pct", None) is not None:
        if shortest >= _CONVNEXT_CROP_BELOW:  # ConvNeXt warps to a square without a crop
            return (shortest, shortest), 1.0, "squash"
        target = (shortest, shortest)
        resized = (int(shortest / processor.crop_pct),) * 2
        return target, _crop_fraction(target, resized, where), "shorter"
    elif shortest and crop is not None:
        resized, mode = (shortest, shortest), "shorter"
    else:
        raise ConfigError(
            f"{where}: robench cannot reproduce the image processor's resize ({size}); it "
            "reads {height, width} or {shortest_edge} sizes, pass --input-size and --crop-pct."
        )
    if crop is None:
        return resized, 1.0, mode
    target = (_size(crop, "height") or resized[0], _size(crop, "width") or resized[1])
    return target, _crop_fraction(target, resized, where), mode


def processor_normalisation(processor: Any, channels: int) -> tuple[list[float], list[float]]:
    """mean and std in [0, 1] pixel units, with the processor's rescaling folded in."""
    scale = float(processor.rescale_factor) if getattr(processor, "do_rescale", True) else 1.0
    factor = 255.0 * scale  # the model sees x * factor before normalising
    if getattr(processor, "do_normalize", True):
        mean = [float(v) for v in _per_channel(processor.image_mean, channels)]
        std = [float(v) for v in _per_channel(processor.image_std, channels)]
    else:
        mean, std = [0.0] * channels, [1.0] * channels
    if math.isclose(factor, 1.0, rel_tol=1e-9):
        return mean, std
    return [m / factor for m in mean], [s / factor for s in std]


def _per_channel(value: Any, channels: int) -> list[float]:
    values = [value] if isinstance(value, (int, float)) else list(value)
    return values * channels if len(values) == 1 else values


def processor_preprocessing(
    processor: Any, channels: int, where: str
) -> tuple[ModelSpec, dict[str, str]]:
    """The processor's preprocessing as a ModelSpec plus robench's resize mode and backend."""
    (height, width), crop_pct, mode = _geometry(processor, where)
    mean, std = processor_normalisation(processor, channels)
    resample = getattr(processor, "resample", None)
    interpolation = _RESAMPLE.get(int(resample), "bilinear") if resample is not None else None
    spec = ModelSpec(
        input_size=(channels, height, width),
        mean=tuple(mean),
        std=tuple(std),
        interpolation=interpolation,
        crop_pct=crop_pct,
    )
    backend = getattr(processor, "backend", "pil")
    return spec, {"resize_mode": mode, "backend": backend if backend == "torchvision" else "pil"}
