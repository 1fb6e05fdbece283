"""Turn an image into the pixel-space tensor a model expects: float (C, H, W) in [0, 1].

The eval transform follows timm's convention (timm.data.transforms_imagenet_eval, crop mode
"center"): resize so the image covers `size / crop_pct` keeping its aspect ratio (for a square
target: the shorter side becomes `floor(size / crop_pct)`), then center-crop to (H, W).
With `resize=False` (`crop_only()`, used for ImageNet-C, whose images are released at
224x224) the image is only center-cropped to (H, W), as Hendrycks' ImageNet-C test script
does; an image smaller than (H, W) is then a DataError.

There is no normalisation here, on purpose: images reach attacks in pixel space and the
model's mean/std is a layer inside the wrapped model, so an epsilon of 1/255 is one grey level.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from robench._core.errors import ConfigError, DataError
from robench._core.registry import did_you_mean

# Interpolation names as timm and torchvision spell them.
INTERPOLATIONS: dict[str, Image.Resampling] = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
    "box": Image.Resampling.BOX,
    "hamming": Image.Resampling.HAMMING,
}

# PIL mode for each channel count a model may take.
_MODES: dict[int, str] = {1: "L", 3: "RGB"}

# Channel counts of a uint8 array PIL reads as L, RGB or RGBA (None: an H x W array).
_ARRAY_CHANNELS = (None, 1, 3, 4)


@dataclass(frozen=True)
class Preprocessing:
    """How images are brought to the model's input size; call it on an image to apply it."""

    # (channels, height, width) the model takes; channels is 1 (grayscale) or 3 (RGB).
    input_size: tuple[int, int, int]
    # Resampling filter used when resizing, one of INTERPOLATIONS.
    interpolation: str = "bicubic"
    # Fraction of the resized image kept by the center crop, in (0, 1]; unused without resize.
    crop_pct: float = 1.0
    # Resize before the center crop; False: center-crop the image as it is (`crop_only()`).
    resize: bool = True
    # How the resize treats the aspect ratio, one of RESIZE_MODES: "shorter" keeps it (timm,
    # transformers' `shortest_edge`), "squash" stretches to (H, W) / crop_pct (transformers'
    # `{height, width}` sizes, as ViT and DeiT processors do).
    resize_mode: str = "shorter"
    # Which library resizes and crops, one of BACKENDS: "pil" (timm's eval transform) or
    # "torchvision" (transformers' default image processors: uint8 tensors, antialiased).
    backend: str = "pil"

    def __post_init__(self) -> None:
        size = tuple(self.input_size)
        if len(size) != 3 or any(not isinstance(v, numbers.Integral) or v <= 0 for v in size):
            raise ConfigError(
                f"input_size {self.input_size!r} is not (channels, height, width) of positive "
                "integers; give it like (3, 224, 224)."
            )
        size = tuple(int(v) for v in size)
        object.__setattr__(self, "input_size", size)
        if size[0] not in _MODES:
            raise ConfigError(
                f"input_size {size!r} has {size[0]} channels but robench reads images as 1 "
                "(grayscale) or 3 (RGB) channels; fix the model's input_size."
            )
        for value, table, what in (
            (self.interpolation, INTERPOLATIONS, "interpolation"),
            (self.resize_mode, RESIZE_MODES, "resize mode"),
            (self.backend, BACKENDS, "resize backend"),
        ):
            if value not in table:
                raise ConfigError(did_you_mean(value, list(table), what))
        if not 0.0 < self.crop_pct <= 1.0:
            raise ConfigError(
                f"crop_pct {self.crop_pct!r} is outside (0, 1]; use a fraction like 0.875 "
                "(1.0 keeps the whole resized image)."
            )

    def crop_only(self) -> Preprocessing:
        """The same input size, center-cropped without resizing (for pre-rendered images)."""
        return dataclasses.replace(self, resize=False)

    @property
    def channels(self) -> int:
        return self.input_size[0]

    @property
    def height_width(self) -> tuple[int, int]:
        return self.input_size[1], self.input_size[2]

    def __call__(self, image: Image.Image | np.ndarray) -> torch.Tensor:
        """A PIL image or a uint8 H x W (x C) array -> float tensor (C, H, W) in [0, 1]."""
        if isinstance(image, np.ndarray):
            fast = self._array_fast_path(image)
            if fast is not None:
                return fast
            image = _array_to_pil(image)
        if not isinstance(image, Image.Image):
            raise DataError(
                f"cannot preprocess a {type(image).__name__}; expected a PIL image or a uint8 "
                "numpy array of shape (H, W) or (H, W, C)."
            )
        resized = self._resize_and_crop(self._converted(image))
        if isinstance(resized, torch.Tensor):  # the torchvision backend: uint8 (C, H, W)
            return resized.to(torch.float32).div_(255.0).contiguous()
        array = np.array(resized, dtype=np.uint8)
        return _uint8_to_tensor(array.reshape(array.shape[0], array.shape[1], -1))

    @property
    def batches_resize(self) -> bool:
        """Whether `many` resizes images of one size together (the torchvision backend)."""
        return self.backend == "torchvision" and self.resize

    def pixels(self, image: Image.Image) -> np.ndarray:
        """The decoded image in the model's channel count: uint8 (H, W, C), read by `many`."""
        array = np.array(self._converted(image), dtype=np.uint8)
        return array.reshape(array.shape[0], array.shape[1], -1)

    def many(self, arrays: Sequence[np.ndarray]) -> list[torch.Tensor]:
        """`pixels` of several images -> the tensors `__call__` gives for each, equal to the
        last bit: with the torchvision backend the images of one size are resized by one
        call on their stacked uint8 batch, as transformers' image processors do."""
        if not self.batches_resize:
            return [self(array[:, :, 0] if array.shape[2] == 1 else array) for array in arrays]
        (height, width), out = self.height_width, [torch.empty(0)] * len(arrays)
        groups: dict[tuple[int, int], list[int]] = {}
        for position, array in enumerate(arrays):
            groups.setdefault((array.shape[1], array.shape[0]), []).append(position)
        for image_wh, positions in groups.items():
            stacked = torch.from_numpy(np.stack([arrays[p] for p in positions]))
            new_wh = RESIZE_MODES[self.resize_mode](image_wh, (width, height), self.crop_pct)
            resized = _torchvision_resize_crop_tensor(
                stacked.permute(0, 3, 1, 2), new_wh, (width, height), self.interpolation
            )
            batch = resized.to(torch.float32).div_(255.0).contiguous()
            for p, tensor in zip(positions, batch, strict=True):
                out[p] = tensor
        return out

    def _converted(self, image: Image.Image) -> Image.Image:
        mode = _MODES[self.channels]
        return image if image.mode == mode else image.convert(mode)

    def _array_fast_path(self, array: np.ndarray) -> torch.Tensor | None:
        """Skip PIL when a uint8 array already has the target size and channel count."""
        if array.dtype != np.uint8 or (self.resize and self.crop_pct != 1.0):
            return None
        channels = 1 if array.ndim == 2 else array.shape[-1] if array.ndim == 3 else None
        if channels != self.channels or tuple(array.shape[:2]) != self.height_width:
            return None
        return _uint8_to_tensor(array.reshape(array.shape[0], array.shape[1], channels))

    def _resize_and_crop(self, image: Image.Image) -> Image.Image | torch.Tensor:
        height, width = self.height_width
        if image.size == (width, height) and (self.crop_pct == 1.0 or not self.resize):
            return image
        if not self.resize:
            return _center_crop(image, (width, height))
        new_w, new_h = RESIZE_MODES[self.resize_mode](image.size, (width, height), self.crop_pct)
        return BACKENDS[self.backend](image, (new_w, new_h), (width, height), self.interpolation)


def _center_crop(image: Image.Image, target_wh: tuple[int, int]) -> Image.Image:
    """torchvision's center_crop offsets; an image smaller than the target is a DataError."""
    (img_w, img_h), (width, height) = image.size, target_wh
    if img_w < width or img_h < height:
        raise DataError(
            f"image of {img_w}x{img_h} pixels is smaller than the model input {width}x{height} "
            "and this data is center-cropped without resizing; use a model whose input fits "
            "the images (ImageNet-C images are 224x224)."
        )
    top = round((img_h - height) / 2.0)
    left = round((img_w - width) / 2.0)
    return image.crop((left, top, left + width, top + height))


def _covering_size(
    image_wh: tuple[int, int], target_wh: tuple[int, int], crop_pct: float
) -> tuple[int, int]:
    """Size (w, h) that keeps the aspect ratio and covers the target divided by crop_pct."""
    img_w, img_h = image_wh
    scale_w = math.floor(target_wh[0] / crop_pct)
    scale_h = math.floor(target_wh[1] / crop_pct)
    if scale_w == scale_h:
        # torchvision Resize(int): the shorter side becomes `scale`, the longer is truncated.
        short, long = (img_w, img_h) if img_w <= img_h else (img_h, img_w)
        new_short, new_long = scale_w, int(scale_w * long / short)
        new_w, new_h = (new_short, new_long) if img_w <= img_h else (new_long, new_short)
    else:
        # timm ResizeKeepRatio(longest=0): the side that needs the least scaling fits exactly.
        ratio = min(img_h / scale_h, img_w / scale_w)
        new_w, new_h = round(img_w / ratio), round(img_h / ratio)
    # Guard against rounding one pixel short of the crop.
    return max(new_w, target_wh[0]), max(new_h, target_wh[1])


def _squashed_size(
    image_wh: tuple[int, int], target_wh: tuple[int, int], crop_pct: float
) -> tuple[int, int]:
    """Size (w, h) of target / crop_pct, whatever the image's aspect ratio."""
    del image_wh  # the aspect ratio is not kept
    return math.floor(target_wh[0] / crop_pct), math.floor(target_wh[1] / crop_pct)


RESIZE_MODES = {"shorter": _covering_size, "squash": _squashed_size}


def _pil_resize_crop(
    image: Image.Image, size_wh: tuple[int, int], crop_wh: tuple[int, int], interpolation: str
) -> Image.Image:
    if size_wh != image.size:
        image = image.resize(size_wh, INTERPOLATIONS[interpolation])
    return _center_crop(image, crop_wh)


def _torchvision_resize_crop(
    image: Image.Image, size_wh: tuple[int, int], crop_wh: tuple[int, int], interpolation: str
) -> torch.Tensor:
    """transformers' TorchvisionBackend: an antialiased resize of the uint8 tensor, then a
    center crop whose offsets are floored (PIL's path rounds them)."""
    array = np.array(image, dtype=np.uint8)
    tensor = torch.from_numpy(array.reshape(array.shape[0], array.shape[1], -1)).permute(2, 0, 1)
    return _torchvision_resize_crop_tensor(tensor, size_wh, crop_wh, interpolation)


def _torchvision_resize_crop_tensor(
    tensor: torch.Tensor, size_wh: tuple[int, int], crop_wh: tuple[int, int], interpolation: str
) -> torch.Tensor:
    """`_torchvision_resize_crop` of a uint8 (..., C, H, W) tensor: one image or a batch."""
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.v2 import functional as tvf

    if size_wh != (tensor.shape[-1], tensor.shape[-2]):
        mode = InterpolationMode(interpolation)
        tensor = tvf.resize(tensor, [size_wh[1], size_wh[0]], interpolation=mode, antialias=True)
    (width, height), (img_h, img_w) = crop_wh, tensor.shape[-2:]
    if img_w < width or img_h < height:
        raise DataError(
            f"image of {img_w}x{img_h} pixels is smaller than the model input {width}x{height}"
            " after resizing; check the model's preprocessing (size and crop)."
        )
    top, left = int((img_h - height) / 2.0), int((img_w - width) / 2.0)
    return tensor[..., top : top + height, left : left + width]


BACKENDS: dict[str, Callable[..., Image.Image | torch.Tensor]] = {
    "pil": _pil_resize_crop,
    "torchvision": _torchvision_resize_crop,
}


def _array_to_pil(array: np.ndarray) -> Image.Image:
    if array.dtype != np.uint8:
        raise DataError(
            f"image array has dtype {array.dtype}; expected uint8 pixels 0..255, convert it "
            "with (array * 255).round().astype(np.uint8) if it holds floats in [0, 1]."
        )
    channels = array.shape[2] if array.ndim == 3 else None
    if array.ndim not in (2, 3) or channels not in _ARRAY_CHANNELS:
        raise DataError(
            f"image array has shape {array.shape}; expected (H, W) or (H, W, C) with C in "
            "1, 3 or 4."
        )
    if channels == 1:
        array = array[:, :, 0]
    return Image.fromarray(np.ascontiguousarray(array))


def _uint8_to_tensor(array: np.ndarray) -> torch.Tensor:
    """(H, W, C) uint8 -> (C, H, W) float32 in [0, 1]."""
    if not array.flags.writeable:  # torch.from_numpy warns on read-only memory
        array = array.copy()
    tensor = torch.from_numpy(np.ascontiguousarray(array)).permute(2, 0, 1)
    return tensor.to(torch.float32).div_(255.0).contiguous()
