"""FAN-ViT in robench's zoo: the released state-dict layout, and the forward pass against a
transcription of NVlabs' released definition (tests/fan_released.py) on the same weights."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import timm
import torch
from fan_released import ReleasedFAN, released_fan_vit_keys
from torch import nn

import robench.models.zoo  # noqa: F401  (registers the FAN models with timm)
from robench._core.errors import CheckpointError, ConfigError
from robench._core.model_hooks import report_sections, supports_adaptive_attack
from robench.models.checkpoints import load_state_dict_into, read_checkpoint
from robench.models.layers import set_differentiable
from robench.models.layers.fan import EllipticalTokenMixing, TokenMixing
from robench.models.zoo.fan import checkpoint_filter_fn

TOL = 1e-5


def _shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def _random_state(keys: dict[str, tuple[int, ...]], seed: int = 0) -> dict[str, torch.Tensor]:
    """Weights far from any initialisation: every gamma, norm, BN statistic and temperature
    differs from 1/0, so a forgotten or swapped parameter changes the output."""
    gen = torch.Generator().manual_seed(seed)
    state = {}
    for key, shape in keys.items():
        if key.endswith("num_batches_tracked"):
            state[key] = torch.tensor(7)
        elif key.endswith(("running_var", "gamma1", "gamma2", "gamma", "temperature")) or (
            ".norm" in key
        ):
            state[key] = torch.rand(shape, generator=gen) + 0.5
        else:
            fan_in = max(1, int(torch.tensor(shape[1:]).prod())) if len(shape) > 1 else 16
            state[key] = torch.randn(shape, generator=gen) / fan_in**0.5
    return state


def test_names_are_robench_not_timm_builtins() -> None:
    """timm itself ships no FAN (checked at test time): the names come from robench's zoo."""
    for name in ("fan_tiny_12_p16_224", "fan_small_12_p16_224", "fan_nano_4_p4_28"):
        entry = timm.models.model_entrypoint(name)
        assert entry.__module__ == "robench.models.zoo.fan"


@pytest.mark.parametrize("name", ["fan_tiny_12_p16_224", "fan_tiny_elliptical_12_p16_224"])
def test_state_dict_layout_is_the_released_one(name: str) -> None:
    expected = released_fan_vit_keys()
    assert len(expected) == 439
    assert _shapes(timm.create_model(name)) == expected
    assert _shapes(ReleasedFAN()) == expected  # the transcription agrees with the data


def test_small_layout_matches_the_released_builder() -> None:
    expected = released_fan_vit_keys(C=384, heads=8)
    assert _shapes(timm.create_model("fan_small_12_p16_224")) == expected
    params = sum(p.numel() for p in timm.create_model("fan_small_12_p16_224").parameters())
    assert round(params / 1e6, 1) == 28.3  # FAN-S-ViT in the FAN paper's Table


def test_tiny_parameter_count() -> None:
    params = sum(p.numel() for p in timm.create_model("fan_tiny_12_p16_224").parameters())
    assert round(params / 1e6, 1) == 7.3  # NVlabs README: FAN-T-ViT 7.3M


def _pair(name: str, elliptical: bool, **released: int) -> tuple[nn.Module, nn.Module]:
    oracle = ReleasedFAN(elliptical=elliptical, **released).eval()
    state = _random_state(_shapes(oracle))
    oracle.load_state_dict(state, strict=True)
    model = timm.create_model(name).eval()
    load_state_dict_into(model, state, model_name=name)  # robench's strict loader
    return model, oracle


@pytest.mark.parametrize("elliptical", [False, True], ids=["fan", "fan-elliptical"])
def test_tiny_forward_equals_released_transcription(elliptical: bool) -> None:
    name = "fan_tiny_elliptical_12_p16_224" if elliptical else "fan_tiny_12_p16_224"
    model, oracle = _pair(name, elliptical)
    # 112x112 (7x7 tokens) keeps the test fast; the weights and every op are those at 224.
    x = torch.rand(2, 3, 112, 112, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours, theirs = model(x), oracle(x)
    assert ours.shape == (2, 1000)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=TOL)
    assert theirs.std() > 0.1  # not a degenerate output that any model would match


@pytest.mark.parametrize("elliptical", [False, True], ids=["fan", "fan-elliptical"])
def test_nano_forward_equals_released_transcription(elliptical: bool) -> None:
    name = "fan_nano_elliptical_4_p4_28" if elliptical else "fan_nano_4_p4_28"
    released = dict(patch_size=4, in_chans=1, C=64, depth=4, heads=4, classes=10)
    model, oracle = _pair(name, elliptical, mlp_ratio=2, **released)  # type: ignore[arg-type]
    x = torch.rand(5, 1, 28, 28, generator=torch.Generator().manual_seed(2))
    for fused in (True, False):  # fused kernel and explicit softmax alike
        for module in model.modules():
            if isinstance(module, TokenMixing):
                module.fused_attn = fused
        with torch.no_grad():
            torch.testing.assert_close(model(x), oracle(x), rtol=0, atol=TOL)


def test_elliptical_changes_the_output_from_the_second_layer_on() -> None:
    """Same weights: the twins differ (M acts), and the first token mixing stays standard."""
    base, _ = _pair("fan_nano_4_p4_28", False, patch_size=4, in_chans=1, C=64, depth=4,
                    heads=4, classes=10, mlp_ratio=2)  # fmt: skip
    ell = timm.create_model("fan_nano_elliptical_4_p4_28").eval()
    ell.load_state_dict(base.state_dict(), strict=True)
    layers = [m for m in ell.modules() if isinstance(m, EllipticalTokenMixing)]
    assert [layer.is_first for layer in layers] == [True, False, False, False]
    assert not any(isinstance(m, EllipticalTokenMixing) for m in base.modules())
    x = torch.rand(4, 1, 28, 28, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert (base(x) - ell(x)).abs().max() > 1e-3
    assert report_sections(ell)["elliptical"]["layers"] == 3
    assert supports_adaptive_attack(ell) and not supports_adaptive_attack(base)


def test_gradients_flow_through_m_when_differentiable() -> None:
    model = timm.create_model("fan_nano_elliptical_4_p4_28").eval()
    x = torch.rand(3, 1, 28, 28, generator=torch.Generator().manual_seed(4))
    grads = []
    for flag in (False, True):
        with set_differentiable(model, flag):
            xi = x.clone().requires_grad_(True)
            model(xi).logsumexp(dim=1).sum().backward()
            grads.append(xi.grad)
    assert grads[0] is not None and grads[1] is not None
    assert not torch.allclose(grads[0], grads[1])


def test_released_checkpoint_file_loads(tmp_path: Path) -> None:
    """A file shaped like NVlabs' `fan_vit_tiny.pth.tar` (timm's train.py: weights under
    `state_dict`, with `args` and `epoch`) loads without trusting pickles."""
    state = _random_state(released_fan_vit_keys())
    path = tmp_path / "fan_vit_tiny.pth.tar"
    torch.save({"epoch": 299, "arch": "fan_tiny_12_p16_224", "state_dict": state,
                "args": argparse.Namespace(model="fan_tiny_12_p16_224")}, path)  # fmt: skip
    ckpt = read_checkpoint(path)
    model = timm.create_model("fan_tiny_elliptical_12_p16_224")
    load_state_dict_into(model, ckpt.state_dict, model_name="fan_tiny_elliptical_12_p16_224")
    assert torch.equal(
        model.state_dict()["blocks.11.attn.kv.weight"], state["blocks.11.attn.kv.weight"]
    )


def test_a_deit_checkpoint_is_refused_readably() -> None:
    deit = timm.create_model("deit_tiny_patch16_224").state_dict()
    with pytest.raises(CheckpointError, match="does not fit model 'fan_tiny_12_p16_224'"):
        load_state_dict_into(timm.create_model("fan_tiny_12_p16_224"), deit,
                             model_name="fan_tiny_12_p16_224")  # fmt: skip


def test_checkpoint_filter_accepts_the_xcit_style_layout() -> None:
    """The released filter's renames: `pos_embeder.` and fused class-attention qkv."""
    model = timm.create_model("fan_nano_4_p4_28")
    state = {k: v.clone() for k, v in model.state_dict().items()}
    legacy = {}
    for key, value in state.items():
        if key.startswith("pos_embed."):
            legacy[key.replace("pos_embed.", "pos_embeder.")] = value
        elif ".attn.q." in key and key.startswith("cls_attn_blocks"):
            parts = [state[key.replace(".q.", f".{n}.")] for n in "qkv"]
            legacy[key.replace(".q.", ".qkv.")] = torch.cat(parts, dim=0)
        elif not (key.startswith("cls_attn_blocks") and (".attn.k." in key or ".attn.v." in key)):
            legacy[key] = value
    filtered = checkpoint_filter_fn({"model": legacy}, model)
    assert filtered.keys() == state.keys()
    assert all(torch.equal(filtered[k], state[k]) for k in state)


def test_bad_options_raise_config_errors() -> None:
    with pytest.raises(ConfigError, match="no pretrained weights"):
        timm.create_model("fan_tiny_12_p16_224", pretrained=True)
    with pytest.raises(ConfigError, match=r"\*_elliptical_\* twin"):
        timm.create_model("fan_nano_4_p4_28", scaling="mean")
    with pytest.raises(ConfigError, match="patch sizes"):
        timm.create_model("fan_nano_4_p4_28", patch_size=2, img_size=28)
    model = timm.create_model("fan_nano_elliptical_4_p4_28", scaling="mean")
    assert {m.scaling for m in model.modules() if isinstance(m, EllipticalTokenMixing)} == {"mean"}


@pytest.mark.parametrize("card", ["fan_nano_fmnist", "fan_nano_elliptical_fmnist"])
def test_shipped_nano_fans_load_and_classify(
    card: str, fmnist_test: tuple[torch.Tensor, torch.Tensor]
) -> None:
    """The shipped cards load by name (sha256 checked) and are trained: well above chance."""
    from robench.models.loading import load_model
    from robench.models.spec import bundled_cards

    weights = bundled_cards()[card].with_suffix(".safetensors")
    assert weights.stat().st_size < 2_000_000
    loaded = load_model(card)
    assert loaded.architecture.startswith("fan_nano")
    assert ("elliptical" in card) == ("elliptical" in loaded.architecture)
    images, labels = fmnist_test
    with torch.inference_mode():
        top1 = (loaded.model(images[:256]).argmax(dim=1) == labels[:256]).float().mean()
    assert top1 > 0.7
