"""Contract tests over every model robench registers in timm's registry."""

from __future__ import annotations

import pytest
import timm
import torch

from robench._core.errors import ConfigError
from robench.models.zoo import is_elliptical, list_robench_models

NAMES = list_robench_models()
SLOW = {
    "deit_base_elliptical_patch16_224",
    "deit_small_elliptical_patch16_224",
    "fan_small_12_p16_224",
    "fan_small_elliptical_12_p16_224",
    "segmenter_tiny_baseline",
    "segmenter_tiny_elliptical",
}


def test_registry_lists_robench_models() -> None:
    expected = [
        "deit_base_elliptical_patch16_224",
        "deit_small_elliptical_patch16_224",
        "deit_tiny_elliptical_patch16_224",
        "fan_nano_4_p4_28",
        "fan_nano_elliptical_4_p4_28",
        "fan_small_12_p16_224",
        "fan_small_elliptical_12_p16_224",
        "fan_tiny_12_p16_224",
        "fan_tiny_elliptical_12_p16_224",
        "segmenter_nano_baseline",
        "segmenter_nano_elliptical",
        "segmenter_tiny_baseline",
        "segmenter_tiny_elliptical",
        "vit_nano_elliptical_patch4_28",
        "vit_nano_patch4_28",
    ]
    assert expected == NAMES
    assert list_robench_models("vit_nano*") == [
        "vit_nano_elliptical_patch4_28",
        "vit_nano_patch4_28",
    ]


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in NAMES]
)
def test_model_forward(name: str) -> None:
    torch.manual_seed(0)
    model = timm.create_model(name).eval()
    cfg = model.pretrained_cfg
    with torch.inference_mode():
        out = model(torch.rand(2, *cfg["input_size"]))
    if getattr(model, "robench_task", None) == "semantic-segmentation":
        assert out.shape == (2, cfg["num_classes"], *cfg["input_size"][1:])  # logits per pixel
    else:
        assert out.shape == (2, cfg["num_classes"])
    assert torch.isfinite(out).all()
    assert is_elliptical(model) == ("elliptical" in name)


@pytest.mark.parametrize("name", NAMES)
def test_pretrained_raises_clear_error(name: str) -> None:
    with pytest.raises(ConfigError, match=f"{name} has no pretrained weights"):
        timm.create_model(name, pretrained=True)


def test_nano_pair_is_small_and_identical_in_parameters() -> None:
    base = timm.create_model("vit_nano_patch4_28")
    twin = timm.create_model("vit_nano_elliptical_patch4_28")
    assert sum(p.numel() for p in base.parameters()) < 300_000
    base_shapes = {k: v.shape for k, v in base.state_dict().items()}
    assert {k: v.shape for k, v in twin.state_dict().items()} == base_shapes
    twin.load_state_dict(base.state_dict(), strict=True)


def test_nano_default_cfg() -> None:
    cfg = timm.create_model("vit_nano_elliptical_patch4_28").pretrained_cfg
    assert cfg["input_size"] == (1, 28, 28) and cfg["num_classes"] == 10
    assert cfg["mean"] == (0.2860,) and cfg["std"] == (0.3530,)
    assert cfg["interpolation"] == "bilinear" and cfg["crop_pct"] == 1.0


def test_deit_default_cfg_matches_timm_deit() -> None:
    ours = timm.models.get_pretrained_cfg("deit_tiny_elliptical_patch16_224")
    deit = timm.models.get_pretrained_cfg("deit_tiny_patch16_224")
    assert ours is not None and deit is not None
    for key in ("input_size", "mean", "std", "crop_pct", "interpolation", "num_classes"):
        assert getattr(ours, key) == getattr(deit, key), key
    assert not ours.has_weights and not timm.models.is_model_pretrained(ours.architecture)


def test_elliptical_kwargs_reach_the_layers() -> None:
    model = timm.create_model("vit_nano_elliptical_patch4_28", scaling="mean", delta=0.5)
    layer = model.blocks[1].attn
    assert (layer.scaling, layer.delta, layer.estimator) == ("mean", 0.5, "values")
    with pytest.raises(ConfigError, match="standard attention"):
        timm.create_model("vit_nano_patch4_28", scaling="mean")
