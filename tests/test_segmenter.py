"""Segmenter (ViT encoder + mask transformer): shapes, gradients, attention variants, inference."""

from __future__ import annotations

import pytest
import timm
import torch

import robench.models.zoo  # noqa: F401  (registers the models with timm)
from robench._core.errors import ConfigError
from robench.models.layers import EllipticalAttention, is_elliptical, set_differentiable
from robench.models.sliding_window import InferenceConfig, SlidingWindow, with_inference
from robench.models.zoo.segmenter import Segmenter

NANO = ("segmenter_nano_baseline", "segmenter_nano_elliptical")


def _nano(name: str, seed: int = 0, **kwargs: object) -> Segmenter:
    torch.manual_seed(seed)
    return timm.create_model(name, **kwargs).eval()


@pytest.mark.parametrize("name", NANO)
@pytest.mark.parametrize("size", [(64, 64), (50, 70)])
def test_logits_have_one_channel_per_class_at_the_input_size(
    name: str, size: tuple[int, int]
) -> None:
    model = _nano(name)
    with torch.no_grad():
        logits = model(torch.rand(2, 3, *size))
    assert logits.shape == (2, 11, *size)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("name", NANO)
def test_gradients_reach_the_input(name: str) -> None:
    model = _nano(name)
    x = torch.rand(2, 3, 64, 64, requires_grad=True)
    model(x).logsumexp(dim=1).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0


def test_elliptical_and_baseline_share_parameters_but_differ_in_attention() -> None:
    baseline, elliptical = _nano(NANO[0]), _nano(NANO[1])
    assert not is_elliptical(baseline) and is_elliptical(elliptical)
    layers = [m for m in elliptical.modules() if isinstance(m, EllipticalAttention)]
    assert len(layers) == 4  # the encoder's; the decoder stays standard
    elliptical.load_state_dict(baseline.state_dict())  # same keys and shapes
    x = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        assert not torch.allclose(baseline(x), elliptical(x))


@pytest.mark.parametrize("name", NANO)
def test_eval_mode_is_deterministic(name: str) -> None:
    model = _nano(name)
    x = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        assert torch.equal(model(x), model(x))


def test_create_model_takes_num_classes_and_elliptical_options() -> None:
    model = timm.create_model("segmenter_nano_elliptical", num_classes=11)
    assert model.robench_task == "semantic-segmentation"
    assert model.pretrained_cfg["input_size"] == (3, 64, 64)
    assert timm.create_model("segmenter_nano_baseline", num_classes=5)(
        torch.rand(1, 3, 64, 64)
    ).shape == (1, 5, 64, 64)
    model = timm.create_model("segmenter_nano_elliptical", scaling="mean")
    assert {m.scaling for m in model.modules() if isinstance(m, EllipticalAttention)} == {"mean"}
    with pytest.raises(ConfigError, match="elliptical options"):
        timm.create_model("segmenter_nano_baseline", scaling="mean")
    with pytest.raises(ConfigError, match="no pretrained weights"):
        timm.create_model("segmenter_nano_baseline", pretrained=True)


def test_tiny_is_segmenter_ti_for_ade20k_with_slide_inference() -> None:
    model = timm.create_model("segmenter_tiny_elliptical")
    assert model.num_classes == 150
    assert model.robench_inference == InferenceConfig("slide", (512, 512), (480, 480))
    assert 6.5e6 < sum(p.numel() for p in model.parameters()) < 7e6  # Segmenter-Ti: 6.7M


class _Coordinates(torch.nn.Module):
    """A 'model' whose logits are its input's first two channels: exact under any tiling."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :2] * 1.0


def test_slide_on_an_input_of_the_crop_size_equals_whole_inference() -> None:
    model = _nano(NANO[1])
    x = torch.rand(2, 3, 64, 64)
    slide = SlidingWindow(model, crop_size=(64, 64), stride=(48, 48))
    with torch.no_grad():
        assert torch.equal(slide(x), model(x))


@pytest.mark.parametrize("size", [(100, 130), (64, 64), (40, 30), (65, 200)])
def test_slide_covers_every_pixel_including_the_edges(size: tuple[int, int]) -> None:
    x = torch.rand(2, 3, *size)
    calls: list[tuple[int, int]] = []
    model = _Coordinates()
    model.register_forward_hook(lambda m, args, out: calls.append(tuple(args[0].shape[-2:])))
    out = SlidingWindow(model, crop_size=(64, 64), stride=(48, 48))(x)
    assert torch.allclose(out, x[:, :2])  # no pixel missed (count 0 -> inf/NaN) or misplaced
    assert all(h == min(64, size[0]) and w == min(64, size[1]) for h, w in calls)


def test_slide_resizes_low_resolution_logits_of_each_window() -> None:
    model = _nano(NANO[0])
    with torch.no_grad():
        out = SlidingWindow(model, (64, 64), (32, 32))(torch.rand(1, 3, 96, 80))
    assert out.shape == (1, 11, 96, 80) and torch.isfinite(out).all()


def test_inference_config_picks_the_wrapper_and_rejects_bad_settings() -> None:
    model = _Coordinates()
    assert with_inference(model, InferenceConfig()) is model
    assert isinstance(
        with_inference(model, InferenceConfig("slide", (8, 8), (4, 4))), SlidingWindow
    )
    with pytest.raises(ConfigError):
        InferenceConfig("slide")
    with pytest.raises(ConfigError):
        InferenceConfig("tiles")  # type: ignore[arg-type]


def test_set_differentiable_lets_input_gradients_through_m() -> None:
    """Adaptive attacks: with M differentiable the input gradient changes (M depends on x)."""
    model = _nano(NANO[1])
    x = torch.rand(1, 3, 64, 64)

    def grad() -> torch.Tensor:
        x_ = x.clone().requires_grad_(True)
        model(x_).logsumexp(dim=1).sum().backward()
        assert x_.grad is not None
        return x_.grad

    detached = grad()
    with set_differentiable(model, True):
        through_m = grad()
    assert not torch.allclose(detached, through_m)


def test_slide_inference_passes_input_gradients() -> None:
    model = _nano(NANO[1])
    x = torch.rand(1, 3, 80, 96, requires_grad=True)
    SlidingWindow(model, (64, 64), (48, 48))(x).sum().backward()
    assert x.grad is not None and (x.grad != 0).float().mean() > 0.5
