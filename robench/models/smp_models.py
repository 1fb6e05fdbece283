"""segmentation-models-pytorch networks as timm-registered robench models (third-party).

    pip install 'robench[smp]'      # segmentation-models-pytorch, pinned in constraints.txt
    robench eval smp_unet_resnet18 --import robench.models.smp_models ...

Importing this module registers the names with timm and imports nothing heavy; the builder
imports `segmentation_models_pytorch`. Encoders start from random weights
(`encoder_weights=None`): robench downloads nothing, load a checkpoint into the model. The
network takes normalised images (its pretrained_cfg carries ImageNet's mean/std, what smp's
encoders are trained with); smp's encoders need sides divisible by 32, so the image is padded
right and bottom and the padding cut off the logits (B, K, H, W).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from timm.models import build_model_with_cfg, generate_default_cfgs, register_model
from torch import nn

from robench._core.errors import ConfigError
from robench.models.zoo._timm_variant import weightless_cfg

__all__ = ["SmpSegmentation"]

EXTRA = "pip install 'robench[smp]' (segmentation-models-pytorch)"


class SmpSegmentation(nn.Module):
    """An smp architecture (`smp.create_model(arch, encoder_name, ...)`) that takes any size."""

    robench_task = "semantic-segmentation"

    def __init__(
        self,
        arch: str,
        encoder_name: str,
        num_classes: int = 150,
        in_chans: int = 3,
        divisor: int = 32,
        **smp_kwargs: Any,
    ) -> None:
        super().__init__()
        try:
            import segmentation_models_pytorch as smp
        except ImportError:
            raise ConfigError(f"smp_{arch.lower()}_{encoder_name} needs {EXTRA}.") from None
        self.num_classes = num_classes
        self.divisor = divisor
        self.net = smp.create_model(
            arch,
            encoder_name=encoder_name,
            encoder_weights=None,
            in_channels=in_chans,
            classes=num_classes,
            **smp_kwargs,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        H, W = x.shape[-2:]
        d = self.divisor
        logits = self.net(F.pad(x, (0, -W % d, 0, -H % d)))  # (B, K, H', W')
        return logits[:, :, :H, :W]  # (B, K, H, W)


def _create(variant: str, pretrained: bool, arch: str, encoder: str, **kwargs: Any) -> nn.Module:
    if pretrained:
        raise ConfigError(
            f"{variant} has no pretrained weights in robench; create it with pretrained=False "
            "and load a checkpoint into it."
        )
    return build_model_with_cfg(
        SmpSegmentation, variant, pretrained=False, arch=arch, encoder_name=encoder, **kwargs
    )


def _cfg() -> dict[str, Any]:
    return weightless_cfg(
        num_classes=150,
        input_size=(3, 512, 512),
        interpolation="bilinear",
        fixed_input_size=False,
        first_conv="net.encoder.conv1",
        classifier="net.segmentation_head",
    )


default_cfgs = generate_default_cfgs({"smp_unet_resnet18": _cfg()})


@register_model
def smp_unet_resnet18(pretrained: bool = False, **kwargs: Any) -> nn.Module:
    """smp U-Net with a ResNet-18 encoder (random init), 150 classes by default."""
    return _create("smp_unet_resnet18", pretrained, "Unet", "resnet18", **kwargs)
