"""Representation collapse on Segmenters (the paper's Fig. 6 ADE20K panel, at nano scale).

A Segmenter has two block lists (the ViT encoder and the mask-transformer decoder); it names
the encoder with `robench_token_encoder`, so the diagnostics read one value per encoder block.
The judge: the same numbers from forward hooks placed on the encoder's blocks by hand, on
real built-in scenes (fashion-scenes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import timm
import torch
from torch import nn
from typer.testing import CliRunner

import robench.models.zoo  # noqa: F401  (registers the models with timm)
from robench._core.errors import ConfigError
from robench.cli import app
from robench.data.segmentation.scenes import FashionScenes
from robench.diagnostics import build_diagnostic
from robench.diagnostics.capture import find_transformer
from robench.diagnostics.collapse import mean_pairwise_cosine
from robench.models.zoo.segmenter import Segmenter

NANO = ("segmenter_nano_baseline", "segmenter_nano_elliptical")
DEPTH = 4  # the nano encoder's blocks (the decoder has one more, which must not count)


@pytest.fixture(scope="module")
def scenes(fashion_mnist_dir: Path) -> torch.Tensor:
    data = FashionScenes(split="test", root=fashion_mnist_dir, length=6)
    return torch.stack([data[i][0] for i in range(len(data))])  # (6, 3, 64, 64) in [0, 1]


def _nano(name: str) -> Segmenter:
    torch.manual_seed(0)  # both twins get the same weights: they have the same parameters
    return timm.create_model(name).eval()


def _by_hand(model: Segmenter, images: torch.Tensor) -> list[float]:
    """Mean pairwise cosine of all tokens after each encoder block, hooks placed here."""
    outputs: list[torch.Tensor] = []
    handles = [
        block.register_forward_hook(lambda m, a, out: outputs.append(out))
        for block in model.encoder.blocks
    ]
    with torch.no_grad():
        model(images)
    for handle in handles:
        handle.remove()
    return [float(mean_pairwise_cosine(tokens).mean()) for tokens in outputs]


@pytest.mark.parametrize("name", NANO)
def test_collapse_reads_one_value_per_encoder_block(name: str, scenes: torch.Tensor) -> None:
    model = _nano(name)
    values = build_diagnostic("collapse", {"batch_size": 4}).run(model, scenes).values
    assert len(values["per_layer"]) == DEPTH == len(model.encoder.blocks)
    assert all(-1.0 <= v <= 1.0 for v in values["per_layer"])
    assert values["per_layer"] == pytest.approx(_by_hand(model, scenes), abs=1e-6)
    assert find_transformer(model).network is model.encoder


def test_elliptical_changes_collapse_after_the_first_block(scenes: torch.Tensor) -> None:
    """Same weights: the first block is standard attention in both twins, later ones differ."""
    collapse = build_diagnostic("collapse")
    baseline, elliptical = (collapse.run(_nano(n), scenes).values["per_layer"] for n in NANO)
    assert elliptical[0] == pytest.approx(baseline[0], abs=1e-9)
    assert all(e != b for e, b in zip(elliptical[1:], baseline[1:], strict=True))


def test_without_the_hook_the_two_block_lists_are_refused() -> None:
    class NoHook(nn.Module):  # the same network, without `robench_token_encoder`
        def __init__(self, inner: Segmenter) -> None:
            super().__init__()
            self.encoder, self.decoder = inner.encoder, inner.decoder

    with pytest.raises(ConfigError, match="2 separate block lists"):
        find_transformer(NoHook(_nano(NANO[0])))


@pytest.mark.parametrize("name", NANO)
def test_the_segmentation_diagnostics_suite_runs_on_scenes(name: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    args = ["eval", name, "--suite", "segmentation-diagnostics", "--limit", "6"]
    result = CliRunner().invoke(app, [*args, "--allow-random-weights", "--out", str(out)])
    assert result.exit_code == 0, result.output
    diagnostics = {d["name"]: d for d in json.loads(out.read_text())["diagnostics"]}
    collapse = diagnostics["collapse"]
    assert collapse["n_samples"] == 6 and len(collapse["values"]["per_layer"]) == DEPTH
    assert all(-1.0 <= v <= 1.0 for v in collapse["values"]["per_layer"])
    assert len(diagnostics["head_redundancy"]["values"]["per_layer_mean"]) == DEPTH


def test_the_hook_is_found_through_robench_s_wrappers() -> None:
    """segmenter_tiny as evaluated: normalisation around a sliding window around the net."""
    from robench.models.loading import load_model
    from robench.models.sliding_window import SlidingWindow

    loaded = load_model("segmenter_tiny_elliptical")
    assert isinstance(loaded.model.model, SlidingWindow)  # NormalizedModel(SlidingWindow(...))
    parts = find_transformer(loaded.model)
    assert parts.depth == 12 and parts.num_prefix_tokens == 1
