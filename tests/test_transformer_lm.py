"""Causal transformer language models and robench's language-model registry."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import nn

from robench._core.errors import ConfigError, DataError
from robench._core.model_hooks import report_sections
from robench._core.registry import Registry
from robench.diagnostics.capture import capture_attention, capture_tokens, find_transformer
from robench.models.layers.elliptical_attention import EllipticalAttention
from robench.models.zoo import lm_registry
from robench.models.zoo.lm_registry import (
    create_language_model,
    is_language_model,
    list_language_models,
    register_language_model,
)
from robench.models.zoo.transformer_lm import TransformerLM, sinusoidal_positions
from robench.models.zoo_names import LANGUAGE_MODELS

VOCAB = 50
NAMES = list_language_models("transformer_lm_*")
# name -> (depth, embed_dim, heads, feed-forward)
CONFIGS = {
    "nano": (4, 64, 4, 256),
    "small": (16, 128, 8, 2048),
    "medium": (16, 256, 8, 2048),
}


def _tokens(batch: int = 2, length: int = 8, seed: int = 0) -> torch.Tensor:
    return torch.randint(VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def _model(name: str = "transformer_lm_nano_elliptical", **kwargs: Any) -> TransformerLM:
    torch.manual_seed(0)
    model = create_language_model(name, VOCAB, **kwargs)
    assert isinstance(model, TransformerLM)
    return model.eval()


def _expected_parameters(depth: int, dim: int, ff: int) -> int:
    """Tied embedding + blocks (2 LayerNorms, qkv and proj with bias, two-layer MLP) + norm."""
    block = 2 * 2 * dim + (3 * dim * dim + 3 * dim) + (dim * dim + dim) + (dim * ff + ff)
    block += ff * dim + dim
    return VOCAB * dim + depth * block + 2 * dim


def test_registry_lists_the_zoo_language_models() -> None:
    # zoo_names is the torch-free copy of what robench's zoo registers (tests may register
    # their own builders beside them, e.g. tests/text_classifier_fixture.py)
    from robench.models.zoo.lm_registry import _LANGUAGE_MODELS

    zoo = [
        n
        for n in list_language_models()
        if _LANGUAGE_MODELS.get(n).__module__.startswith("robench.")
    ]
    assert list(LANGUAGE_MODELS) == zoo
    expected = [f"transformer_lm_{size}{tail}" for size in CONFIGS for tail in ("", "_elliptical")]
    assert sorted(expected) == NAMES
    assert list_language_models("transformer_lm_*elliptical") == [
        "transformer_lm_medium_elliptical",
        "transformer_lm_nano_elliptical",
        "transformer_lm_small_elliptical",
    ]
    assert is_language_model("transformer_lm_small")
    assert not is_language_model("deit_tiny_elliptical_patch16_224")


@pytest.mark.parametrize("name", NAMES)
def test_every_model_builds_with_its_configuration(name: str) -> None:
    depth, dim, heads, ff = CONFIGS[name.split("_")[2]]
    model = _model(name)
    assert (model.depth, model.embed_dim, model.vocab_size) == (depth, dim, VOCAB)
    assert len(model.blocks) == depth
    blocks: list[Any] = list(model.blocks)
    for block in blocks:
        attn = block.attn
        assert (attn.num_heads, attn.head_dim) == (heads, dim // heads)
        assert block.mlp.fc1.out_features == ff
        assert isinstance(attn, EllipticalAttention) == name.endswith("_elliptical")
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == _expected_parameters(depth, dim, ff)
    assert "head.weight" not in model.state_dict()  # the head is the embedding matrix
    assert not any(isinstance(m, nn.Linear) and m.out_features == VOCAB for m in model.modules())
    with torch.no_grad():
        logits = model(_tokens(batch=2, length=5))
    assert logits.shape == (2, 5, VOCAB)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()


def test_elliptical_twin_has_the_baseline_state_dict() -> None:
    base, twin = _model("transformer_lm_nano"), _model("transformer_lm_nano_elliptical")
    assert {k: v.shape for k, v in twin.state_dict().items()} == {
        k: v.shape for k, v in base.state_dict().items()
    }
    twin.load_state_dict(base.state_dict(), strict=True)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("transformer_lm_nano", {}),
        ("transformer_lm_nano_elliptical", {"m_estimator": "prefix"}),
    ],
)
def test_logits_at_t_depend_only_on_tokens_up_to_t(name: str, kwargs: dict[str, Any]) -> None:
    model = _model(name, **kwargs).double()
    tokens = _tokens(batch=2, length=8)
    with torch.no_grad():
        reference = model(tokens)
        for changed in range(1, tokens.shape[1]):
            edited = tokens.clone()
            edited[:, changed] = (edited[:, changed] + 1) % VOCAB
            logits = model(edited)
            torch.testing.assert_close(
                logits[:, :changed], reference[:, :changed], rtol=0, atol=1e-10
            )
            assert not torch.allclose(logits[:, changed], reference[:, changed], atol=1e-6)


def test_paper_estimator_leaks_later_tokens_into_earlier_logits() -> None:
    model = _model(m_estimator="paper").double()
    tokens = _tokens(batch=2, length=8)
    edited = tokens.clone()
    edited[:, 5] = (edited[:, 5] + 1) % VOCAB
    with torch.no_grad():
        change = (model(edited)[:, :5] - model(tokens)[:, :5]).abs().amax()
    assert change > 1e-6


def test_exactly_depth_minus_one_layers_use_m() -> None:
    for estimator, causal in (("prefix", "prefix"), ("paper", "full")):
        model = _model(m_estimator=estimator)
        layers: list[Any] = [block.attn for block in model.blocks]
        assert all(isinstance(layer, EllipticalAttention) for layer in layers)
        assert [layer.is_first for layer in layers] == [True, False, False, False]
        assert {layer.causal_estimator for layer in layers} == {causal}
        assert model.m_estimator == estimator


def test_report_section_records_the_estimator_of_m() -> None:
    sections = report_sections(_model("transformer_lm_nano_elliptical", m_estimator="paper"))
    assert sections["language_model"] == {
        "architecture": "transformer_lm_nano_elliptical",
        "layers": 4,
        "embed_dim": 64,
        "heads": 4,
        "vocab_size": VOCAB,
        "m_estimator": "paper",
    }
    assert sections["elliptical"]["layers"] == 3
    assert sections["elliptical"]["causal_estimator"] == "full"
    assert _model(scaling="mean").robench_report_section([_model()])[1]["m_estimator"] == "prefix"
    baseline = report_sections(_model("transformer_lm_small"))
    assert baseline.keys() == {"language_model"}
    assert baseline["language_model"]["m_estimator"] is None
    assert baseline["language_model"]["layers"] == 16


def test_elliptical_options_pass_through() -> None:
    model = _model(scaling="mean", delta=0.5, differentiable=True, dropout=0.0)
    layer: Any = model.blocks[1].attn
    assert (layer.scaling, layer.delta, layer.differentiable) == ("mean", 0.5, True)
    assert all(m.p == 0.0 for m in model.modules() if isinstance(m, nn.Dropout))
    assert _model().blocks[1].attn.scaling == "max"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("transformer_lm_nano_elliptical", {"m_estimator": "full"}, "Unknown m_estimator 'full'"),
        ("transformer_lm_nano", {"scaling": "mean"}, "transformer_lm_nano_elliptical"),
        ("transformer_lm_nano", {"m_estimator": "prefix"}, "standard attention"),
        ("transformer_lm_nano_elliptical", {"causal_estimator": "full"}, "m_estimator"),
        ("transformer_lm_nano_elliptical", {"estimator": "random"}, "m_estimator='prefix'"),
        ("transformer_lm_nano", {"dropuot": 0.2}, r"'transformer_lm_nano'.*\['dropuot'\]"),
        ("transformer_lm_nano", {"embed_dim": 30}, "not a multiple of num_heads 4"),
        ("transformer_lm_nan", {}, "Did you mean 'transformer_lm_nano'"),
    ],
)
def test_bad_configuration_is_a_config_error(
    name: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        create_language_model(name, VOCAB, **kwargs)


def test_bad_vocab_size_and_token_shape() -> None:
    with pytest.raises(ConfigError, match="vocab_size must be an integer >= 1, got 0"):
        create_language_model("transformer_lm_nano", 0)
    with pytest.raises(DataError, match=r"shape \(batch, length\)"):
        _model()(torch.zeros(8, dtype=torch.long))


def test_eval_is_deterministic_and_train_uses_dropout() -> None:
    model, tokens = _model(), _tokens()
    with torch.no_grad():
        first, second = model(tokens), model(tokens)
        assert torch.equal(first, second)
        model.train()
        assert not torch.equal(model(tokens), first)


def test_gradients_reach_the_embedding_in_train_mode() -> None:
    model = _model().train()
    tokens = _tokens(length=9)
    logits = model(tokens[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
    loss.backward()
    grad = model.token_embed.weight.grad
    assert grad is not None and torch.isfinite(grad).all()
    seen = tokens.unique()
    assert (grad[seen].abs().sum(dim=1) > 0).all()  # through the embedding lookup
    unseen = torch.ones(VOCAB, dtype=torch.bool)
    unseen[seen] = False
    assert (grad[unseen].abs().sum(dim=1) > 0).all()  # through the tied head only
    assert all(p.grad is not None for p in model.parameters())


def test_sinusoidal_positions() -> None:
    pe = sinusoidal_positions(5, 6, dtype=torch.float64)
    assert pe.shape == (5, 6)
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0] * 3, dtype=torch.float64))
    angle = 3 / 10000 ** (2 / 6)  # position 3, channel pair 1
    assert pe[3, 2].item() == pytest.approx(math.sin(angle), abs=1e-6)
    assert pe[3, 3].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert sinusoidal_positions(3, 5).shape == (3, 5)  # odd widths work too


def test_diagnostics_find_the_blocks() -> None:
    model = _model()
    parts = find_transformer(model)
    assert parts.network is model
    assert parts.blocks == tuple(model.blocks)
    assert (parts.depth, parts.num_prefix_tokens, parts.has_class_token) == (4, 0, False)
    tokens = _tokens(batch=2, length=6)
    with torch.no_grad(), capture_attention(model) as attention, capture_tokens(model) as hidden:
        model(tokens)
    maps = attention.take()
    assert len(maps) == 4 and all(m.shape == (2, 4, 6, 6) for m in maps)
    for m in maps:
        torch.testing.assert_close(m.sum(dim=-1), torch.ones(2, 4, 6))
        assert torch.equal(m.triu(1), torch.zeros_like(m))  # causal: no weight on later tokens
    assert [h.shape for h in hidden.take()] == [(2, 6, 64)] * 4


def test_plugins_register_with_the_decorator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lm_registry, "_LANGUAGE_MODELS", Registry("language model"))

    @register_language_model
    def plugin_lm(vocab_size: int, **kwargs: Any) -> nn.Module:
        return nn.Embedding(vocab_size, **kwargs)

    assert plugin_lm.__name__ == "plugin_lm"  # returned unchanged
    assert list_language_models() == ["plugin_lm"]
    model = create_language_model("plugin_lm", 7, embedding_dim=3)
    assert isinstance(model, nn.Embedding) and model.weight.shape == (7, 3)
    # The same plugin imported again (same module and name) replaces its entry ...
    assert register_language_model(plugin_lm) is plugin_lm
    assert list_language_models() == ["plugin_lm"]

    # ... but another builder may not take a registered name.
    def other() -> None:
        pass

    other.__name__ = "plugin_lm"
    with pytest.raises(ValueError, match="already registered"):
        register_language_model(other)
