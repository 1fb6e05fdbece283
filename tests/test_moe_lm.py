"""Mixture-of-experts layer and the Switch / GLaM language models."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from robench._core.errors import ConfigError
from robench._core.model_hooks import report_sections
from robench.models.layers.elliptical_attention import EllipticalAttention
from robench.models.layers.mixture_of_experts import MixtureOfExperts, load_balancing_loss
from robench.models.zoo import moe_lm
from robench.models.zoo.lm_registry import (
    create_language_model,
    language_model_task,
    list_language_models,
)
from robench.models.zoo.moe_lm import MoELM, moe_layers

VOCAB = 40
MOE_NAMES = list_language_models("switch_lm_*") + list_language_models("glam_lm_*")
TINY: dict[str, Any] = dict(embed_dim=16, num_heads=2, mlp_dim=16, num_experts=4)


def _model(name: str, **kwargs: Any) -> MoELM:
    torch.manual_seed(0)
    model = create_language_model(name, VOCAB, **{**TINY, **kwargs})
    assert isinstance(model, MoELM)
    return model.eval()


def _tokens(batch: int = 2, length: int = 12, seed: int = 0) -> torch.Tensor:
    return torch.randint(VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def test_the_registry_holds_switch_and_glam_at_three_sizes() -> None:
    expected = {
        f"{family}_lm_{size}{tail}"
        for family in ("switch", "glam")
        for size in ("nano", "small", "medium")
        for tail in ("", "_elliptical")
    }
    assert set(MOE_NAMES) == expected
    assert all(language_model_task(name) == "language-modeling" for name in MOE_NAMES)


@pytest.mark.parametrize("name", sorted(MOE_NAMES))
def test_every_moe_lm_gives_next_token_logits_and_a_finite_aux_loss(name: str) -> None:
    model = _model(name, depth=2)
    logits = model(_tokens())
    assert logits.shape == (2, 12, VOCAB)
    assert model.aux_loss is not None and torch.isfinite(model.aux_loss)
    uses_ellipse = any(isinstance(m, EllipticalAttention) for m in model.modules())
    assert uses_ellipse == name.endswith("_elliptical")


@pytest.mark.parametrize(
    ("name", "top_k", "moe_blocks"),
    [("switch_lm_nano", 1, [0, 1, 2, 3]), ("glam_lm_nano", 2, [0, 2])],
)
def test_switch_routes_top1_in_every_block_and_glam_top2_in_every_other(
    name: str, top_k: int, moe_blocks: list[int]
) -> None:
    model = _model(name)
    tokens = _tokens(batch=3, length=10)
    model(tokens)
    layers = moe_layers(model)
    assert [i for i, b in enumerate(model.blocks) if isinstance(b.mlp, MixtureOfExperts)] == (
        moe_blocks
    )
    for layer in layers:
        assert layer.top_k == top_k
        assert int(layer.expert_counts.sum()) == tokens.numel() * top_k


def test_the_sizes_follow_competesmoe_scripts() -> None:
    """[60]'s WikiText-103 shapes (moe_lm docstring): blocks, width, 16 experts of width C."""
    shapes = {
        "switch_lm_small": (moe_lm._SWITCH_SMALL, 3, 128),
        "switch_lm_medium": (moe_lm._SWITCH_MEDIUM, 6, 352),
        "glam_lm_small": (moe_lm._GLAM_SMALL, 6, 144),
        "glam_lm_medium": (moe_lm._GLAM_MEDIUM, 8, 352),
    }
    for args, depth, dim in shapes.values():
        assert (args["depth"], args["embed_dim"], args["mlp_dim"]) == (depth, dim, dim)
        assert (args["num_experts"], args["num_heads"]) == (16, 8)


def test_routing_is_deterministic_and_per_token() -> None:
    """No noise and no capacity: a sequence's logits do not depend on its batch."""
    model = _model("switch_lm_nano_elliptical")
    tokens = _tokens(batch=4, length=10, seed=3)
    with torch.no_grad():
        alone = model(tokens[:1])
        batch = model(tokens)
        again = model(tokens)
    assert torch.allclose(alone[0], batch[0], atol=1e-6)
    assert torch.equal(batch, again)


def test_the_layer_is_a_weighted_sum_of_its_chosen_experts() -> None:
    torch.manual_seed(0)
    layer = MixtureOfExperts(8, 12, num_experts=3, top_k=2).eval()
    x = torch.randn(5, 8)
    _, chosen, gates = layer.route(x)
    assert torch.allclose(gates.sum(-1), torch.ones(5))
    expected = torch.stack(
        [
            sum(gates[n, s] * layer._expert(int(chosen[n, s]), x[n : n + 1])[0] for s in range(2))
            for n in range(5)
        ]
    )
    assert torch.allclose(layer(x), expected, atol=1e-6)


def test_a_uniform_router_has_aux_loss_one() -> None:
    probs = torch.full((8, 4), 0.25)
    chosen = torch.arange(8).remainder(4)[:, None]
    assert load_balancing_loss(probs, chosen).item() == pytest.approx(1.0)


def test_the_aux_loss_trains_the_router() -> None:
    model = _model("glam_lm_nano").train()
    model(_tokens())
    assert model.aux_loss is not None
    model.aux_loss.backward()
    router = moe_layers(model)[0].router.weight
    assert router.grad is not None and router.grad.abs().sum() > 0


def test_bad_routing_options_are_one_sentence() -> None:
    with pytest.raises(ConfigError, match="top_k"):
        _model("switch_lm_nano", top_k=5)
    with pytest.raises(ConfigError, match="moe_every"):
        _model("glam_lm_nano", moe_every=0)
    with pytest.raises(ConfigError, match="elliptical options"):
        _model("switch_lm_nano", delta=2.0)


def test_the_report_section_names_experts_and_routing() -> None:
    model = _model("glam_lm_nano_elliptical")
    sections = report_sections(model)
    assert sections["language_model"]["experts"] == 4
    assert sections["language_model"]["top_k"] == 2
    assert sections["language_model"]["moe_layers"] == 2
    assert sections["language_model"]["m_estimator"] == "prefix"
