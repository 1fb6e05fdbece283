"""segmentation-models-pytorch models registered with timm (skipped without the smp extra)."""

from __future__ import annotations

import pytest
import timm
import torch

import robench.models.smp_models  # noqa: F401  (registers the smp models with timm)
from robench._core.errors import ConfigError

pytest.importorskip("segmentation_models_pytorch")


@pytest.mark.parametrize("size", [(64, 64), (50, 70)])
def test_unet_returns_logits_per_pixel_at_any_input_size(size: tuple[int, int]) -> None:
    torch.manual_seed(0)
    model = timm.create_model("smp_unet_resnet18", num_classes=11).eval()
    assert model.robench_task == "semantic-segmentation"
    assert model.pretrained_cfg["mean"] == (0.485, 0.456, 0.406)
    x = torch.rand(2, 3, *size, requires_grad=True)
    logits = model(x)
    assert logits.shape == (2, 11, *size)
    logits.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0


def test_unet_has_no_pretrained_weights() -> None:
    with pytest.raises(ConfigError, match="no pretrained weights"):
        timm.create_model("smp_unet_resnet18", pretrained=True)
