"""Elliptical Attention: equivalences with timm's Attention, Eq. 10/13/62, variants, options."""

from __future__ import annotations

import copy
import math

import pytest
import timm
import torch
from timm.layers import Attention
from torch import nn

import robench.models.zoo  # noqa: F401  (registers the models with timm)
from robench._core.errors import ConfigError
from robench.models.layers import (
    EllipticalAttention,
    configure_elliptical,
    consistent_weights,
    elliptical_weights,
    set_differentiable,
)
from robench.models.layers import elliptical_attention as ea

DIM, HEADS, TOKENS = 32, 4, 7
HEAD_DIM = DIM // HEADS


def _layers(n: int, seed: int = 0, **options: object) -> nn.ModuleList:
    """`n` linked elliptical layers with different random weights."""
    torch.manual_seed(seed)
    layers = nn.ModuleList(EllipticalAttention(DIM, HEADS, qkv_bias=True) for _ in range(n))
    configure_elliptical(layers, **options)  # type: ignore[arg-type]
    return layers.eval()


def _run(layers: nn.ModuleList, x: torch.Tensor, is_causal: bool = False) -> torch.Tensor:
    """The layers as residual attention blocks: x <- x + layer(x)."""
    for layer in layers:
        x = x + layer(x, is_causal=is_causal)
    return x


def _timm_twin(layer: EllipticalAttention) -> Attention:
    twin = Attention(DIM, HEADS, qkv_bias=True).eval()
    twin.load_state_dict(layer.state_dict(), strict=True)
    return twin


def _nano(**options: object) -> nn.Module:
    """The nano elliptical ViT with peaked attention (timm's init makes it near-uniform)."""
    torch.manual_seed(0)
    model = timm.create_model("vit_nano_elliptical_patch4_28", **options).eval()
    for block in model.blocks:
        nn.init.normal_(block.attn.qkv.weight, std=0.15)
    return model


def _set_fused(model: nn.Module, fused: bool) -> None:
    for module in model.modules():
        if isinstance(module, EllipticalAttention):
            module.fused_attn = fused


def _ones_estimator(
    layer: EllipticalAttention, k: torch.Tensor, v: torch.Tensor, *unused: object
) -> torch.Tensor:
    return torch.ones_like(k[:, :, :1])  # (B, H, 1, D)


# (a) M = identity reproduces timm's Attention -------------------------------------------------


@pytest.mark.parametrize("fused", [True, False])
def test_identity_metric_equals_timm_attention(
    monkeypatch: pytest.MonkeyPatch, fused: bool
) -> None:
    monkeypatch.setitem(
        ea._ESTIMATORS, "values", ea._Estimator(_ones_estimator, True, False, ("full",))
    )
    layers = _layers(2)
    _set_fused(layers, fused)
    x0, x = torch.randn(3, TOKENS, DIM), torch.randn(3, TOKENS, DIM)
    layers[0](x0)
    out = layers[1](x)
    expected = _timm_twin(layers[1])(x)
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=0)


# (b) fused == reference ------------------------------------------------------------------------


@pytest.mark.parametrize("scaling", ["max", "mean"])
def test_fused_equals_reference(scaling: str) -> None:
    model = _nano(scaling=scaling)
    x = torch.rand(4, 1, 28, 28)
    fused = model(x)
    _set_fused(model, False)
    reference = model(x)
    torch.testing.assert_close(fused, reference, atol=1e-5, rtol=0)
    standard = timm.create_model("vit_nano_patch4_28").eval()
    standard.load_state_dict(model.state_dict(), strict=True)
    assert (fused - standard(x)).abs().max() > 1e-2  # M changes the logits


def test_fused_equals_reference_causal_prefix() -> None:
    layers = _layers(3, causal_estimator="prefix")
    x = torch.randn(2, TOKENS, DIM)
    fused = _run(layers, x, is_causal=True)
    _set_fused(layers, False)
    reference = _run(layers, x, is_causal=True)
    torch.testing.assert_close(fused, reference, atol=1e-5, rtol=0)


@pytest.mark.parametrize("differentiable", [False, True])
@pytest.mark.parametrize("qk_norm", [False, True])
def test_fused_gradients_equal_reference(differentiable: bool, qk_norm: bool) -> None:
    torch.manual_seed(0)
    layers = nn.ModuleList(
        EllipticalAttention(DIM, HEADS, qkv_bias=True, qk_norm=qk_norm, norm_layer=nn.LayerNorm)
        for _ in range(3)
    )
    configure_elliptical(layers, differentiable=differentiable)
    x = torch.randn(2, TOKENS, DIM)

    def grads() -> list[torch.Tensor]:
        xr = x.clone().requires_grad_(True)
        layers.zero_grad()
        _run(layers, xr).square().sum().backward()
        return [xr.grad] + [p.grad for p in layers.parameters()]  # type: ignore[list-item]

    fused = grads()
    _set_fused(layers, False)
    for a, b in zip(fused, grads(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_inference_mode_in_place_path_matches_autograd_path() -> None:
    model = _nano()
    x = torch.rand(3, 1, 28, 28)
    with torch.inference_mode():
        fast = model(x)
    with torch.no_grad():
        torch.testing.assert_close(model(x), fast, atol=1e-6, rtol=0)
    torch.testing.assert_close(model(x), fast, atol=1e-6, rtol=0)


# (c) the first layer is standard ---------------------------------------------------------------


def test_first_layer_is_standard_attention() -> None:
    model = _nano()
    first = model.blocks[0].attn
    assert first.is_first and not model.blocks[1].attn.is_first
    twin = Attention(64, 4, qkv_bias=True).eval()
    twin.load_state_dict(first.state_dict(), strict=True)
    x = torch.randn(2, 50, 64)
    torch.testing.assert_close(first(x), twin(x), atol=1e-6, rtol=0)


# (d) per-sample M ------------------------------------------------------------------------------


def test_sample_output_independent_of_batch_mates() -> None:
    model = _nano()
    torch.manual_seed(1)
    sample, others = torch.rand(1, 1, 28, 28), torch.rand(7, 1, 28, 28)
    alone = model(sample)
    in_batch = model(torch.cat([others[:3], sample, others[3:]]))[3:4]
    torch.testing.assert_close(alone, in_batch, atol=1e-5, rtol=0)


def test_no_state_leaks_between_forwards_and_deepcopy() -> None:
    model = _nano()
    x = torch.rand(2, 1, 28, 28)
    first = model(x)
    model(torch.rand(5, 1, 28, 28))  # a different batch size in between
    torch.testing.assert_close(model(x), first, atol=0, rtol=0)
    assert model.blocks[0].attn.carry.values is None  # the last layer released V
    clone = copy.deepcopy(model)
    assert clone.blocks[0].attn.carry is clone.blocks[3].attn.carry
    assert clone.blocks[0].attn.carry is not model.blocks[0].attn.carry
    torch.testing.assert_close(clone(x), first, atol=0, rtol=0)


# (e) no NaN for a zero difference --------------------------------------------------------------


@pytest.mark.parametrize("scaling", ["max", "mean"])
def test_zero_difference_gives_identity_without_nan(scaling: str) -> None:
    layers = _layers(2, scaling=scaling, differentiable=True)
    layers[1].load_state_dict(layers[0].state_dict())  # same weights, same input: V_2 == V_1
    x = torch.randn(2, TOKENS, DIM, requires_grad=True)
    layers[0](x)
    out = layers[1](x)
    torch.testing.assert_close(out, _timm_twin(layers[1])(x), atol=1e-6, rtol=0)
    out.square().sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    zeros = torch.zeros(1, 2, 5, 3)
    assert torch.equal(elliptical_weights(zeros, zeros, scaling=scaling), torch.ones(1, 2, 1, 3))


# (g) Eq. 10 + scaling by hand, Eq. 13 against an explicit diag(m) -----------------------------


def test_weights_match_hand_computation() -> None:
    v_prev = torch.zeros(1, 1, 3, 2)
    v = torch.tensor([[1.0, -2.0], [3.0, 0.0], [-2.0, 1.0]])[None, None]  # mean |dv| = [2, 1]
    expected_max = torch.tensor([1.0, 0.5]).view(1, 1, 1, 2)
    expected_mean = torch.tensor([4 / 3, 2 / 3]).view(1, 1, 1, 2)
    torch.testing.assert_close(elliptical_weights(v, v_prev, delta=0.5), expected_max)
    torch.testing.assert_close(elliptical_weights(v, v_prev, scaling="mean"), expected_mean)


def test_layer_output_matches_paper_formula() -> None:
    layers = _layers(2)
    x0, x = torch.randn(2, TOKENS, DIM), torch.randn(2, TOKENS, DIM)
    layers[0](x0)
    out = layers[1](x)

    def qkv(layer: EllipticalAttention, inp: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return layer.qkv(inp).reshape(2, TOKENS, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)

    v_prev = qkv(layers[0], x0)[2]
    q, k, v = qkv(layers[1], x)
    m = elliptical_weights(v, v_prev)[:, :, 0]  # (B, H, D)
    logits = q @ torch.diag_embed(m) @ k.transpose(-2, -1) / math.sqrt(HEAD_DIM)  # Eq. 13
    h = (logits.softmax(-1) @ v).transpose(1, 2).reshape(2, TOKENS, DIM)
    torch.testing.assert_close(out, layers[1].proj(h), atol=1e-5, rtol=0)


# (h) random estimator --------------------------------------------------------------------------


def test_random_estimator_is_randomized_and_seedable() -> None:
    model = _nano(estimator="random")
    assert model.blocks[1].attn.randomized and not model.blocks[0].attn.randomized
    x = torch.rand(2, 1, 28, 28)
    assert not torch.allclose(model(x), model(x))
    torch.manual_seed(123)
    first = model(x)
    torch.manual_seed(123)
    torch.testing.assert_close(model(x), first, atol=0, rtol=0)


# (i) differentiable M changes the input gradient -----------------------------------------------


def test_differentiable_metric_changes_input_gradient() -> None:
    model = _nano()
    x, y = torch.rand(4, 1, 28, 28), torch.tensor([0, 1, 2, 3])

    def input_grad() -> torch.Tensor:
        xr = x.clone().requires_grad_(True)
        nn.functional.cross_entropy(model(xr), y).backward()
        assert xr.grad is not None
        return xr.grad

    detached = input_grad()
    with set_differentiable(model, True):
        assert model.blocks[2].attn.differentiable
        adaptive = input_grad()
    assert not model.blocks[2].attn.differentiable  # restored on exit
    assert torch.isfinite(adaptive).all() and torch.isfinite(detached).all()
    assert (adaptive - detached).abs().max() > 1e-4 * detached.abs().max()


# (j) consistent estimator (Eq. 62) -------------------------------------------------------------


def test_consistent_estimator_known_function() -> None:
    torch.manual_seed(0)
    k = torch.zeros(2, 3, 6, 4)
    k[..., 0] = torch.randn(2, 3, 6)  # f depends on the query's first coordinate only
    v = torch.randn(2, 3, 6, 5)
    m = consistent_weights(k, v, t=0.5)
    assert m.shape == (2, 3, 1, 4)
    torch.testing.assert_close(m, torch.tensor([1.0, 0, 0, 0]).expand(2, 3, 1, 4))


def test_consistent_estimator_matches_brute_force(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    k, v, t = torch.randn(2, 2, 5, 3), torch.randn(2, 2, 5, 4), 0.3

    def f(x: torch.Tensor) -> torch.Tensor:  # (B, H, D) query -> (B, H, Dv)
        weights = ((x[:, :, None] @ k.transpose(-2, -1)) / math.sqrt(3)).softmax(-1)
        return (weights @ v)[:, :, 0]

    raw = torch.zeros(2, 2, 3)
    for i in range(3):
        e = torch.zeros(3)
        e[i] = t
        for n in range(5):
            raw[..., i] += (f(k[:, :, n] + e) - f(k[:, :, n] - e)).abs().sum(-1) / (2 * t) / 5
    expected = (raw / raw.amax(-1, keepdim=True))[:, :, None]
    torch.testing.assert_close(consistent_weights(k, v, t=t), expected, atol=1e-6, rtol=1e-5)
    monkeypatch.setattr(ea, "_CONSISTENT_CHUNK_ELEMENTS", 1)  # one dimension per chunk
    torch.testing.assert_close(consistent_weights(k, v, t=t), expected, atol=1e-6, rtol=1e-5)


def test_consistent_estimator_in_model() -> None:
    model = _nano(estimator="consistent", delta=0.1)
    out = model(torch.rand(2, 1, 28, 28))
    assert out.shape == (2, 10) and torch.isfinite(out).all()
    attn = model.blocks[1].attn
    k = torch.randn(2, 4, 50, 16)
    m = ea._scale(ea._consistent_estimate(attn, k, torch.randn(2, 4, 50, 16), None, False), "max")
    assert m.shape == (2, 4, 1, 16) and m.min() >= 0 and torch.all(m.amax(-1) == 1)


# (k) prefix estimator: no future information ---------------------------------------------------


def test_prefix_weights_equal_full_weights_on_prefix() -> None:
    torch.manual_seed(0)
    v, v_prev = torch.randn(2, 3, 9, 4, dtype=torch.float64), torch.randn(2, 3, 9, 4).double()
    prefix = elliptical_weights(v, v_prev, causal_estimator="prefix")
    assert prefix.shape == (2, 3, 9, 4)
    for t in range(9):
        full = elliptical_weights(v[:, :, : t + 1], v_prev[:, :, : t + 1])
        torch.testing.assert_close(prefix[:, :, t : t + 1], full, atol=1e-12, rtol=0)


def test_prefix_estimator_sees_no_future_tokens() -> None:
    x = torch.randn(2, TOKENS, DIM)
    prefix_layers = _layers(3, causal_estimator="prefix")
    full_out = _run(prefix_layers, x, is_causal=True)
    for t in range(TOKENS):
        head = _run(prefix_layers, x[:, : t + 1], is_causal=True)
        torch.testing.assert_close(head, full_out[:, : t + 1], atol=1e-6, rtol=0)
    leaky = _layers(3)  # the paper's full estimator: early tokens see later ones through M
    assert not torch.allclose(_run(leaky, x[:, :3], True), _run(leaky, x, True)[:, :3], atol=1e-4)


# (l) options -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"scaling": "median"}, "'median'"),
        ({"estimator": "gradient"}, "'gradient'"),
        ({"causal_estimator": "suffix"}, "'suffix'"),
        ({"estimator": "random", "causal_estimator": "prefix"}, "'prefix'"),
        ({"delta": 0.0}, "0.0"),
        ({"delta": float("nan")}, "nan"),
        ({"delta": "1"}, "'1'"),
        ({"differentiable": "yes"}, "'yes'"),
    ],
)
def test_bad_option_raises_config_error(options: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        configure_elliptical(nn.ModuleList([EllipticalAttention(DIM, HEADS)]), **options)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=named):
        timm.create_model("vit_nano_elliptical_patch4_28", **options)


def test_unconfigured_layer_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="configure_elliptical"):
        EllipticalAttention(DIM, HEADS)(torch.randn(1, TOKENS, DIM))


def test_options_in_repr_and_count() -> None:
    layers = nn.ModuleList(EllipticalAttention(DIM, HEADS) for _ in range(3))
    assert configure_elliptical(layers, scaling="mean", delta=2.0) == 3
    assert "scaling='mean'" in repr(layers[1]) and "delta=2.0" in repr(layers[1])
    assert configure_elliptical(nn.Linear(2, 2)) == 0


# (f) DeiT checkpoints load strictly ------------------------------------------------------------


def test_deit_state_dict_loads_strictly() -> None:
    deit = timm.create_model("deit_tiny_patch16_224").state_dict()
    model = timm.create_model("deit_tiny_elliptical_patch16_224", weight_init="skip")
    assert set(model.state_dict()) == set(deit)
    model.load_state_dict(deit, strict=True)
    assert all(torch.equal(model.state_dict()[key], value) for key, value in deit.items())
