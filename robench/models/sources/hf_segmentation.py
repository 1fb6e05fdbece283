"""A transformers semantic-segmentation model as robench evaluates it: pixels -> class logits
(docs/models.md, "Segmentation models").

`PixelValuesSegmenter` returns `.logits`, (B, K, h, w) at the model's own resolution: the task
resizes them once to each label map, as transformers' `post_process_semantic_segmentation`
does (upsampling to the input size first would resize twice). The processor's normalisation
becomes a `NormalizedModel` around it and its `size = {height, width}` the input size; a
processor robench cannot reproduce is refused in one sentence.
"""

from __future__ import annotations

import logging
from typing import Any

from torch import nn

from robench._core.errors import ConfigError
from robench.models.sources.hf_image import PixelValuesClassifier, processor_normalisation
from robench.models.spec import ModelSpec

logger = logging.getLogger(__name__)

_BILINEAR = 2  # PIL's resampling enum, as transformers stores `resample`


class PixelValuesSegmenter(PixelValuesClassifier):
    """`model(pixel_values=x).logits` for normalised x (B, C, H, W): logits (B, K, h, w)."""


def _fixed_size(processor: Any, where: str) -> tuple[int, int]:
    """The (height, width) every image is squashed to, or a ConfigError saying why not."""
    size = getattr(processor, "size", None)
    get = size.get if isinstance(size, dict) else lambda key: getattr(size, key, None)
    height, width = get("height"), get("width")
    keeps_ratio = getattr(processor, "keep_aspect_ratio", False)
    crops = getattr(processor, "do_center_crop", False)
    if getattr(processor, "do_resize", True) and height and width and not keeps_ratio and not crops:
        return int(height), int(width)
    shown = {k: v for k, v in (size.items() if isinstance(size, dict) else vars(size).items()) if v}
    raise ConfigError(
        f"{where}: robench resizes segmentation images to one size without cropping, but the "
        f"image processor's resize ({shown}, center crop {bool(crops)}, keep aspect ratio "
        f"{bool(keeps_ratio)}) is not that; pass --input-size C,H,W to choose the size."
    )


def segmentation_preprocessing(
    processor: Any, channels: int, where: str, *, size_given: bool
) -> ModelSpec:
    """The processor's normalisation and input size (unless --input-size gave one)."""
    if getattr(processor, "do_flip_channel_order", False):
        raise ConfigError(
            f"{where}: the image processor flips RGB to BGR, which robench's model wrapper "
            "does not do; save the model with a processor that keeps RGB order."
        )
    mean, std = processor_normalisation(processor, channels)
    spec = ModelSpec(mean=tuple(mean), std=tuple(std), interpolation="bilinear", crop_pct=1.0)
    if size_given:
        return spec
    height, width = _fixed_size(processor, where)
    resample = getattr(processor, "resample", None)
    if resample is not None and int(resample) != _BILINEAR:
        logger.warning(
            "%s: the image processor resizes with PIL resample %s, robench's segmentation "
            "readers bilinearly; numbers may differ slightly from the processor's.",
            where,
            resample,
        )
    return spec.model_copy(update={"input_size": (channels, height, width)})


def class_names(network: nn.Module) -> list[str] | None:
    """The model's classes in output order, from its config's id2label."""
    id2label = getattr(getattr(network, "config", None), "id2label", None) or {}
    return [str(id2label[i]) for i in sorted(id2label)] if id2label else None
