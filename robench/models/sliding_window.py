"""How a segmentation model is run on a whole image: in one pass ("whole"), or window by
window ("slide": crops of `crop_size` every `stride` pixels, the last row and column moved back
to end on the image's edge, each crop's logits summed into the image and divided by how many
crops covered each pixel): mmsegmentation's `EncoderDecoder.whole_inference` /
`slide_inference`. A zoo model names its mode in `robench_inference`; `with_inference` wraps it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from robench._core.errors import ConfigError

__all__ = ["InferenceConfig", "SlidingWindow", "with_inference"]


@dataclass(frozen=True)
class InferenceConfig:
    """How to run a segmentation model on an image (mmsegmentation's `test_cfg`)."""

    mode: Literal["whole", "slide"] = "whole"
    crop_size: tuple[int, int] | None = None  # (height, width) of a window; "slide" only
    stride: tuple[int, int] | None = None  # (vertical, horizontal) step; "slide" only

    def __post_init__(self) -> None:
        if self.mode not in ("whole", "slide"):
            raise ConfigError(f"inference mode must be 'whole' or 'slide', got {self.mode!r}.")
        if self.mode == "slide":
            for what, pair in (("crop_size", self.crop_size), ("stride", self.stride)):
                if pair is None or len(pair) != 2 or min(pair) < 1:
                    raise ConfigError(
                        f"slide inference needs {what} as two positive integers, got {pair!r}."
                    )


class SlidingWindow(nn.Module):
    """`model` applied window by window: logits (B, K, H, W) at the input's resolution.

    Images smaller than a window are passed whole in that dimension (one window).
    """

    def __init__(self, model: nn.Module, crop_size: tuple[int, int], stride: tuple[int, int]):
        super().__init__()
        InferenceConfig("slide", crop_size, stride)  # validates
        self.model = model
        self.crop_size = (int(crop_size[0]), int(crop_size[1]))
        self.stride = (int(stride[0]), int(stride[1]))

    def extra_repr(self) -> str:
        return f"crop_size={self.crop_size}, stride={self.stride}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, _, height, width = x.shape
        crop_h, crop_w = self.crop_size
        stride_h, stride_w = self.stride
        rows = max(height - crop_h + stride_h - 1, 0) // stride_h + 1
        cols = max(width - crop_w + stride_w - 1, 0) // stride_w + 1
        total: torch.Tensor | None = None
        count = x.new_zeros((1, 1, height, width))
        for row in range(rows):
            for col in range(cols):
                y2 = min(row * stride_h + crop_h, height)
                x2 = min(col * stride_w + crop_w, width)
                y1, x1 = max(y2 - crop_h, 0), max(x2 - crop_w, 0)
                logits = self.model(x[:, :, y1:y2, x1:x2])  # (B, K, h, w)
                if tuple(logits.shape[-2:]) != (y2 - y1, x2 - x1):
                    logits = F.interpolate(
                        logits, size=(y2 - y1, x2 - x1), mode="bilinear", align_corners=False
                    )
                placed = F.pad(logits, (x1, width - x2, y1, height - y2))  # (B, K, H, W)
                total = placed if total is None else total + placed
                count[:, :, y1:y2, x1:x2] += 1
        assert total is not None  # rows, cols >= 1
        return total / count


def with_inference(model: nn.Module, config: InferenceConfig) -> nn.Module:
    """`model` itself for "whole" inference, a `SlidingWindow` around it for "slide"."""
    if config.mode == "whole":
        return model
    assert config.crop_size is not None and config.stride is not None  # checked on creation
    return SlidingWindow(model, config.crop_size, config.stride)
