"""Diagnostics (paper Fig. 1, 3, 6, Table 18, Tables 11-12): values, capture contract, figures."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import timm
import torch
from matplotlib.image import imread
from pydantic import ValidationError
from torch import nn

import robench.models.zoo  # noqa: F401  (registers the nano models with timm)
from robench._core.errors import ConfigError, DataError
from robench.diagnostics import DIAGNOSTICS, build_diagnostic, plot_attention_comparison
from robench.diagnostics.attention_maps import cls_attention_entropy
from robench.diagnostics.capture import capture_attention, capture_tokens, find_transformer
from robench.diagnostics.collapse import mean_pairwise_cosine
from robench.diagnostics.redundancy import pairwise_head_distances
from robench.models.normalization import NormalizedModel
from robench.results.plots.figures import (
    AccuracyPoint,
    AccuracySeries,
    plot_accuracy_vs_eps,
    plot_collapse_curves,
    plot_redundancy,
)

NANO = ["vit_nano_patch4_28", "vit_nano_elliptical_patch4_28"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# FLOPs of one vit_nano sample by hand (a multiply-add = 2): patch embedding 49*16*64*2,
# per block qkv 50*64*192*2 + QK^T and AV 2 * 4*50*50*16*2 + proj 50*64*64*2
# + MLP 2 * 50*64*128*2, four blocks, head 64*10*2.
NANO_FLOPS = 49 * 16 * 64 * 2 + 4 * (1_228_800 + 640_000 + 409_600 + 1_638_400) + 64 * 10 * 2


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> Iterator[None]:
    """Intra-op threads spin against each other on a loaded 2-core machine; one is faster."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def nano_models() -> dict[str, nn.Module]:
    """Random-init nano twins (same seed, so same weights), wrapped to take pixels in [0, 1]."""
    models = {}
    for name in NANO:
        torch.manual_seed(0)
        net = timm.create_model(name)
        models[name] = NormalizedModel(net, (0.2860,), (0.3530,)).eval()
    return models


@pytest.fixture(scope="module")
def images(fmnist_test: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    return fmnist_test[0][:12]  # (12, 1, 28, 28) real Fashion-MNIST images


def _cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 14 * 14, 10)
    ).eval()


# ---------------------------------------------------------------------------------------------
# Pure functions.


def test_collapse_of_identical_tokens_is_one() -> None:
    direction = torch.randn(16)
    scales = torch.tensor([0.5, 1.0, 3.0, 7.0, 0.1])[:, None]  # same direction, other norms
    tokens = (scales * direction).expand(3, 5, 16)  # (B, N, C)
    torch.testing.assert_close(mean_pairwise_cosine(tokens), torch.ones(3, dtype=torch.float64))


def test_collapse_of_orthogonal_tokens_is_zero() -> None:
    tokens = torch.eye(6)[None] * torch.arange(1.0, 7.0)[None, :, None]  # one-hot, (1, 6, 6)
    assert mean_pairwise_cosine(tokens).item() == 0.0


def test_collapse_matches_hand_computation() -> None:
    tokens = torch.tensor(
        [[[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 0.0], [2.0, 0.0]]]
    )
    # cos: (0,1) = (1,2) = 1/sqrt(2), (0,2) = 0; second sample: the zero token has cosine 0.
    expected = torch.tensor([math.sqrt(2) / 3, 1 / 3], dtype=torch.float64)
    torch.testing.assert_close(mean_pairwise_cosine(tokens), expected)


def test_collapse_needs_two_tokens() -> None:
    with pytest.raises(ValueError, match="N >= 2"):
        mean_pairwise_cosine(torch.ones(2, 1, 4))


def test_redundancy_of_identical_heads_is_zero() -> None:
    head = torch.softmax(torch.randn(2, 1, 5, 5), dim=-1)
    assert pairwise_head_distances(head.expand(2, 2, 5, 5)).abs().max().item() == 0.0


def test_redundancy_matches_hand_computation() -> None:
    eye = torch.eye(2)
    flat = torch.full((2, 2), 0.5)
    attn = torch.stack([eye, flat, eye])[None]  # (1, 3, 2, 2)
    # ||eye - flat|| = sqrt(4 * 0.25) = 1; pairs (0, 1), (0, 2), (1, 2).
    expected = torch.tensor([[1.0, 0.0, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(pairwise_head_distances(attn), expected)


def test_entropy_of_uniform_and_peaked_maps() -> None:
    peaked = torch.zeros(3, 3)
    peaked[1, 2] = 0.7  # all attention on one patch (the rest went to the CLS token)
    maps = torch.stack([torch.full((3, 3), 0.1), peaked])  # (2, rows, cols)
    torch.testing.assert_close(cls_attention_entropy(maps), torch.tensor([1.0, 0.0]).double())


# ---------------------------------------------------------------------------------------------
# Capture contract: fails if a future timm stops routing probabilities through attn_drop.


@pytest.mark.parametrize("name", NANO)
def test_attention_capture_contract(
    name: str, nano_models: dict[str, nn.Module], images: torch.Tensor
) -> None:
    model = nano_models[name]
    parts = find_transformer(model)
    flags = [a.fused_attn for a in parts.attentions]
    assert all(flags), "timm's default is the fused path; the test relies on switching it"
    with torch.no_grad():
        reference = model(images)
        with capture_attention(model) as recorder:
            captured_logits = model(images)
            maps = recorder.take()
        after = model(images)
    assert len(maps) == parts.depth == 4
    for attn in maps:
        assert attn.shape == (12, 4, 50, 50)  # (B, H, N, N)
        assert attn.min() >= 0
        torch.testing.assert_close(attn.sum(dim=-1), torch.ones(12, 4, 50))
    torch.testing.assert_close(captured_logits, reference, atol=1e-5, rtol=1e-5)
    assert torch.equal(after, reference)
    assert [a.fused_attn for a in parts.attentions] == flags
    assert all(not a.attn_drop._forward_pre_hooks for a in parts.attentions)


def test_capture_restores_flags_after_an_error(nano_models: dict[str, nn.Module]) -> None:
    parts = find_transformer(nano_models["vit_nano_elliptical_patch4_28"])
    parts.attentions[2].fused_attn = False
    try:
        with pytest.raises(KeyError), capture_attention(parts.network):
            raise KeyError("boom")
        assert [a.fused_attn for a in parts.attentions] == [True, True, False, True]
        assert all(not a.attn_drop._forward_pre_hooks for a in parts.attentions)
    finally:
        parts.attentions[2].fused_attn = True


def test_capture_detects_a_layer_that_records_nothing(
    nano_models: dict[str, nn.Module], images: torch.Tensor
) -> None:
    model = nano_models["vit_nano_patch4_28"]
    parts = find_transformer(model)
    with torch.no_grad(), capture_attention(model) as recorder:
        parts.attentions[1].fused_attn = True  # as if timm ignored the flag
        model(images[:2])
        with pytest.raises(RuntimeError, match=r"\(layer, count\) \[\(1, 0\)\]"):
            recorder.take()
    assert parts.attentions[1].fused_attn is True


@pytest.mark.parametrize("name", NANO)
def test_token_capture_gives_each_block_output(
    name: str, nano_models: dict[str, nn.Module], images: torch.Tensor
) -> None:
    model = nano_models[name]
    net = find_transformer(model).network
    with torch.no_grad(), capture_tokens(model) as recorder:
        model(images)
        tokens = recorder.take()
        features = net.forward_features((images - model.mean) / model.std)
    assert [t.shape for t in tokens] == [(12, 50, 64)] * 4  # (B, N, C) per block
    torch.testing.assert_close(net.norm(tokens[-1]), features)


# ---------------------------------------------------------------------------------------------
# The registered diagnostics.


def test_registry_and_params() -> None:
    assert DIAGNOSTICS.names() == ["attention_maps", "collapse", "efficiency", "head_redundancy"]
    with pytest.raises(ConfigError, match="Did you mean 'collapse'"):
        build_diagnostic("colapse", {})
    with pytest.raises(ValidationError):
        build_diagnostic("collapse", {"include_cls": True, "bogus": 1})
    with pytest.raises(ValidationError):
        build_diagnostic("efficiency", {"iterations": 0})


@pytest.mark.parametrize("include_cls", [True, False])
def test_collapse_values(
    include_cls: bool, nano_models: dict[str, nn.Module], images: torch.Tensor
) -> None:
    model = nano_models["vit_nano_elliptical_patch4_28"]
    model.train()  # the diagnostic runs in eval mode and restores this
    out = build_diagnostic("collapse", {"include_cls": include_cls, "batch_size": 5}).run(
        model, images, out_dir=None
    )
    assert model.training
    model.eval()
    with torch.no_grad(), capture_tokens(model) as recorder:
        model(images)
        tokens = recorder.take()
    start = 0 if include_cls else 1
    expected = [mean_pairwise_cosine(t[:, start:]).mean().item() for t in tokens]
    assert out.values["per_layer"] == pytest.approx(expected, abs=1e-6)
    assert out.values["mean"] == pytest.approx(sum(expected) / 4, abs=1e-6)
    assert len(out.values["per_layer_std"]) == 4
    assert out.files == []


def test_head_redundancy_values(
    nano_models: dict[str, nn.Module], images: torch.Tensor, tmp_path: Path
) -> None:
    model = nano_models["vit_nano_patch4_28"]
    out = build_diagnostic("head_redundancy", {"batch_size": 5}).run(
        model, images, out_dir=tmp_path
    )
    with torch.no_grad(), capture_attention(model) as recorder:
        model(images)
        distances = [pairwise_head_distances(a) for a in recorder.take()]  # 4 x (B, 6)
    assert out.values["per_layer_mean"] == pytest.approx([d.mean().item() for d in distances])
    assert out.values["per_layer_std"] == pytest.approx(
        [d.std(unbiased=False).item() for d in distances]
    )
    pooled = torch.stack(distances)
    assert out.values["mean"] == pytest.approx(pooled.mean().item())
    assert out.values["std"] == pytest.approx(pooled.std(unbiased=False).item())
    assert out.values["mean"] > 0
    assert out.files == [tmp_path / "head_redundancy.png"]
    assert out.files[0].read_bytes().startswith(PNG_SIGNATURE)


def test_efficiency_of_the_nano_twins(
    nano_models: dict[str, nn.Module], images: torch.Tensor
) -> None:
    diagnostic = build_diagnostic("efficiency", {"batch_size": 4, "warmup": 1, "iterations": 2})
    values = {
        name: diagnostic.run(m, images, out_dir=None).values for name, m in nano_models.items()
    }
    base, ell = values["vit_nano_patch4_28"], values["vit_nano_elliptical_patch4_28"]
    for v in (base, ell):
        assert v["throughput_samples_per_s"] > 0
        assert v["latency_ms_per_batch"] > 0
        assert v["peak_memory_mb"] > 0
    assert base["gflops_per_sample"] * 1e9 == pytest.approx(NANO_FLOPS)
    assert ell["gflops_per_sample"] == pytest.approx(base["gflops_per_sample"], rel=0.03)
    assert (
        ell["parameters"]
        == base["parameters"]
        == sum(p.numel() for p in nano_models["vit_nano_patch4_28"].model.parameters())
    )


def test_efficiency_works_on_a_cnn(images: torch.Tensor) -> None:
    out = build_diagnostic("efficiency", {"batch_size": 2, "warmup": 0, "iterations": 1}).run(
        _cnn(), images, out_dir=None
    )
    assert out.values["parameters"] == 4 * 9 + 4 + 4 * 14 * 14 * 10 + 10
    assert out.values["gflops_per_sample"] > 0


@pytest.mark.parametrize("kind", ["collapse", "head_redundancy", "attention_maps"])
def test_token_diagnostics_reject_a_cnn(kind: str, images: torch.Tensor) -> None:
    with pytest.raises(ConfigError, match="Vision Transformer"):
        build_diagnostic(kind, {}).run(_cnn(), images, out_dir=None)


def test_diagnostics_reject_unbatched_images(nano_models: dict[str, nn.Module]) -> None:
    with pytest.raises(DataError, match=r"\(B, C, H, W\)"):
        build_diagnostic("collapse", {}).run(nano_models[NANO[0]], torch.rand(1, 28, 28))


def test_attention_maps_write_pngs(
    nano_models: dict[str, nn.Module], images: torch.Tensor, tmp_path: Path
) -> None:
    diagnostic = build_diagnostic("attention_maps", {"n_images": 2})
    model = nano_models["vit_nano_elliptical_patch4_28"]
    out = diagnostic.run(model, images, out_dir=tmp_path / "a")
    names = [f.name for f in out.files]
    assert names == ["attention_maps.png", "cls_attention_0.png", "cls_attention_1.png"]
    for f in out.files:
        assert f.read_bytes().startswith(PNG_SIGNATURE)
    assert imread(out.files[1]).shape == (7, 7, 4)  # one pixel per patch, RGBA
    height, width, channels = imread(out.files[0]).shape  # 2 rows x (image, heatmap) + colour bar
    assert channels == 4 and height > 2 * 180 and width > 2 * 180
    assert out.values["grid"] == [7, 7]
    assert 0 < out.values["cls_attention_entropy"] <= 1
    maps = torch.tensor(out.values["cls_attention_maps"])
    assert maps.shape == (2, 7, 7)
    assert ((maps.sum(dim=(1, 2)) > 0) & (maps.sum(dim=(1, 2)) < 1)).all()  # CLS->CLS left out
    again = diagnostic.run(model, images, out_dir=tmp_path / "b")
    assert [f.read_bytes() for f in again.files] == [f.read_bytes() for f in out.files]


def test_plot_attention_comparison(
    nano_models: dict[str, nn.Module], images: torch.Tensor, tmp_path: Path
) -> None:
    models = {"DeiT": nano_models[NANO[0]], "Elliptical": nano_models[NANO[1]]}
    path = plot_attention_comparison(models, images[:3], tmp_path / "fig1.png")
    assert path == tmp_path / "fig1.png"
    assert path.read_bytes().startswith(PNG_SIGNATURE)
    height, width, channels = imread(path).shape  # 3 rows x (image, 2 heatmaps) + colour bar
    assert channels == 4 and height > 3 * 180 and width > 3 * 180
    with pytest.raises(ConfigError):
        plot_attention_comparison({}, images[:3], tmp_path / "none.png")


def test_plots(tmp_path: Path) -> None:
    curves = {"DeiT": [0.5, 0.6, 0.7], "Elliptical": [0.4, 0.45, 0.5]}
    paths = [
        plot_collapse_curves(curves, tmp_path / "collapse.png"),
        plot_redundancy(curves, tmp_path / "red.png", per_layer_std=curves),
        plot_accuracy_vs_eps(
            [
                AccuracySeries(
                    "DeiT",
                    "PGD-10",
                    "pgd",
                    tuple(AccuracyPoint(e, a, (a - 5, a + 5), 100) for e, a in acc),
                )
                for acc in [[(1 / 255, 50.0), (2 / 255, 40.0)]]
            ],
            tmp_path / "acc.png",
        ),
    ]
    for path in paths:
        assert path.read_bytes().startswith(PNG_SIGNATURE)
    with pytest.raises(ConfigError, match="no points"):
        plot_accuracy_vs_eps([AccuracySeries("DeiT", "FGSM", "fgsm", ())], tmp_path / "e.png")
