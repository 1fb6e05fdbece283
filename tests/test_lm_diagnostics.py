"""The paper's collapse (Fig. 3) and head-redundancy (Table 18) diagnostics on causal language
models: values on nano models, hand-checkable cases, image-only diagnostics refused, and the
`text-diagnostics` suite end to end from the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from robench._core.errors import ConfigError, DataError
from robench.cli import app
from robench.diagnostics import build_diagnostic
from robench.diagnostics.params import DIAGNOSTICS
from robench.models.zoo.lm_registry import create_language_model
from robench.models.zoo.transformer_lm import TransformerLM

VOCAB = 50
DEPTH = 4  # transformer_lm_nano's blocks
HEADS = 4
NANO = ["transformer_lm_nano", "transformer_lm_nano_elliptical"]


def _model(name: str) -> TransformerLM:
    torch.manual_seed(0)
    model = create_language_model(name, vocab_size=VOCAB)
    assert isinstance(model, TransformerLM)
    return model.eval()


def _tokens(batch: int = 6, length: int = 24, seed: int = 0) -> torch.Tensor:
    return torch.randint(VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", NANO)
def test_collapse_gives_one_similarity_per_layer(name: str) -> None:
    values = build_diagnostic("collapse", {"batch_size": 4}).run(_model(name), _tokens()).values
    assert set(values) == {"per_layer", "per_layer_std", "mean"}
    assert len(values["per_layer"]) == len(values["per_layer_std"]) == DEPTH
    assert all(-1 <= v <= 1 for v in values["per_layer"])
    assert all(0 <= s < 1 for s in values["per_layer_std"])
    # Random tokens of a random model are neither collapsed nor orthogonal.
    assert all(0.05 < v < 0.95 for v in values["per_layer"])
    assert values["mean"] == pytest.approx(sum(values["per_layer"]) / DEPTH)


@pytest.mark.parametrize("name", NANO)
def test_head_redundancy_gives_finite_distances_per_layer(name: str) -> None:
    length = 24
    values = (
        build_diagnostic("head_redundancy", {"batch_size": 4})
        .run(_model(name), _tokens(length=length))
        .values
    )
    assert set(values) == {"per_layer_mean", "per_layer_std", "mean", "std"}
    assert len(values["per_layer_mean"]) == len(values["per_layer_std"]) == DEPTH
    numbers = [*values["per_layer_mean"], *values["per_layer_std"], values["mean"], values["std"]]
    assert all(math.isfinite(v) for v in numbers)
    # Causal rows are distributions too: every distance lies in [0, sqrt(2T)].
    assert all(0 < v <= math.sqrt(2 * length) for v in values["per_layer_mean"])
    assert values["mean"] == pytest.approx(sum(values["per_layer_mean"]) / DEPTH)


@pytest.mark.parametrize("name", NANO)
def test_identical_tokens_without_positions_collapse_fully(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same token everywhere and no positional encoding: every position has the same input,
    causal attention averages equal values, so all hidden states are equal: similarity 1."""
    monkeypatch.setattr(
        "robench.models.zoo.transformer_lm.sinusoidal_positions",
        lambda length, dim, *, device=None, dtype=None: torch.zeros(length, dim, device=device),
    )
    tokens = torch.full((3, 16), 7)
    values = build_diagnostic("collapse").run(_model(name), tokens).values
    assert values["per_layer"] == pytest.approx([1.0] * DEPTH, abs=1e-6)
    assert values["per_layer_std"] == pytest.approx([0.0] * DEPTH, abs=1e-6)


def test_positions_keep_identical_tokens_apart() -> None:
    """With the sinusoidal positions, the same token at every position is not collapsed."""
    values = build_diagnostic("collapse").run(_model(NANO[0]), torch.full((2, 16), 7)).values
    assert all(v < 0.99 for v in values["per_layer"])


@pytest.mark.parametrize("name", NANO)
def test_heads_with_copied_weights_are_fully_redundant(name: str) -> None:
    """Every head a copy of head 0 (its Q, K and V rows): identical maps, distance 0."""
    model = _model(name)
    with torch.no_grad():
        for block in model.blocks:
            qkv = block.get_submodule("attn.qkv")
            assert isinstance(qkv, nn.Linear)
            weight = qkv.weight.view(3, HEADS, -1, qkv.in_features)  # (3, H, D, C)
            bias = qkv.bias.view(3, HEADS, -1)  # (3, H, D)
            weight[:, 1:] = weight[:, :1].clone()
            bias[:, 1:] = bias[:, :1].clone()
    values = build_diagnostic("head_redundancy").run(model, _tokens()).values
    assert values["per_layer_mean"] == pytest.approx([0.0] * DEPTH, abs=1e-6)
    assert values["mean"] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("kind", ["collapse", "head_redundancy"])
def test_values_do_not_depend_on_the_batch_size(kind: str) -> None:
    model, tokens = _model(NANO[1]), _tokens(batch=5)
    one = build_diagnostic(kind, {"batch_size": 1}).run(model, tokens).values
    all_at_once = build_diagnostic(kind, {"batch_size": 5}).run(model, tokens).values
    for key, value in one.items():
        assert all_at_once[key] == pytest.approx(value, rel=1e-5, abs=1e-7)


def test_figures_speak_of_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: dict[str, dict[str, Any]] = {}

    def capture(name: str) -> None:
        def fake(data: Any, path: Path, **kwargs: Any) -> Path:
            calls[name] = kwargs
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"png")
            return path

        monkeypatch.setattr(f"robench.results.plots.figures.{name}", fake)

    capture("plot_collapse_curves")
    capture("plot_redundancy")
    model, tokens = _model(NANO[0]), _tokens(batch=3, length=20)
    collapse = build_diagnostic("collapse").run(model, tokens, out_dir=tmp_path, title="lm")
    redundancy = build_diagnostic("head_redundancy").run(model, tokens, out_dir=tmp_path)
    assert [f.name for f in collapse.files] == ["collapse.png"]
    assert [f.name for f in redundancy.files] == ["head_redundancy.png"]
    note = calls["plot_collapse_curves"]["note"]
    assert "3 windows (20 positions each" in note and "image" not in note
    assert calls["plot_collapse_curves"]["spread_label"] == "± 1 std over windows"
    assert "std over 3 windows × 6 head pairs" in calls["plot_redundancy"]["std_label"]
    assert calls["plot_redundancy"]["ymax"] == pytest.approx(math.sqrt(2 * 20))


def test_efficiency_counts_windows() -> None:
    model = _model(NANO[0])
    params = {"batch_size": 2, "warmup": 0, "iterations": 1}
    values = build_diagnostic("efficiency", params).run(model, _tokens(batch=3)).values
    assert values["parameters"] == sum(p.numel() for p in model.parameters())
    assert values["gflops_per_sample"] > 0 and values["throughput_samples_per_s"] > 0


def test_attention_maps_refuse_token_ids_in_one_sentence() -> None:
    assert DIAGNOSTICS.get("attention_maps").Params.task == "image-classification"
    assert DIAGNOSTICS.get("collapse").Params.task is None
    with pytest.raises(ConfigError, match="applies to image classifiers only") as err:
        build_diagnostic("attention_maps").run(_model(NANO[0]), _tokens())
    assert "remove it from the language-modeling suite" in str(err.value)


@pytest.mark.parametrize(
    ("kind", "inputs", "match"),
    [
        ("collapse", torch.zeros(2, 1, dtype=torch.long), "at least 2 tokens"),
        ("collapse", torch.rand(2, 8), r"\(B, T\)"),
        ("head_redundancy", torch.zeros(0, 8, dtype=torch.long), r"non-empty"),
        ("collapse", torch.ones(2, 8, dtype=torch.bool), r"\(B, C, H, W\)"),
    ],
)
def test_bad_token_batches_are_data_errors(kind: str, inputs: torch.Tensor, match: str) -> None:
    with pytest.raises(DataError, match=match):
        build_diagnostic(kind).run(_model(NANO[0]), inputs)


# ---------------------------------------------------------------------------------------------
# The suite end to end.


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lm") / "nano"
    args = ["train", "transformer_lm_nano", "--data", "pydoc-topics", "--max-steps", "15"]
    args += ["--batch-size", "8", "--target-length", "64", "--val-every", "15"]
    result = CliRunner().invoke(app, [*args, "--val-limit", "10", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out / "best.safetensors"


def _eval(checkpoint: Path, suite: str, out: Path) -> Any:
    args = ["eval", "-c", str(checkpoint), "-s", suite, "--data", "pydoc-topics"]
    return CliRunner().invoke(app, [*args, "--limit", "8", "--target-length", "64", "-o", str(out)])


def test_text_diagnostics_suite_end_to_end(checkpoint: Path, tmp_path: Path) -> None:
    result = _eval(checkpoint, "text-diagnostics", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["task"] == "language-modeling"
    assert [r["name"] for r in report["results"]] == ["clean"]
    assert sorted(report["results"][0]["metrics"]) == [
        "bits_per_byte",
        "perplexity",
        "word_perplexity",
    ]
    by_kind = {d["kind"]: d for d in report["diagnostics"]}
    assert sorted(by_kind) == ["collapse", "head_redundancy"]
    assert all(d["n_samples"] == 8 for d in by_kind.values())
    collapse = by_kind["collapse"]["values"]
    assert len(collapse["per_layer"]) == DEPTH
    assert all(-1 <= v <= 1 for v in collapse["per_layer"])
    redundancy = by_kind["head_redundancy"]["values"]
    assert len(redundancy["per_layer_mean"]) == DEPTH
    assert all(0 < v <= math.sqrt(2 * 64) for v in redundancy["per_layer_mean"])
    for diagnostic in by_kind.values():
        for figure in diagnostic["files"]:
            assert (tmp_path / figure).read_bytes().startswith(b"\x89PNG")


def test_image_only_diagnostic_in_a_text_suite_is_a_config_error(
    checkpoint: Path, tmp_path: Path
) -> None:
    suite = tmp_path / "maps.toml"
    suite.write_text(
        'name = "maps"\nversion = 1\ntask = "language-modeling"\n'
        'metrics = ["perplexity"]\n\n[[perturbations]]\nkind = "clean"\n\n'
        '[[diagnostics]]\nkind = "attention_maps"\n'
    )
    result = _eval(checkpoint, str(suite), tmp_path / "r.json")
    assert result.exit_code == 2, result.output
    assert "applies to image-classification models" in " ".join(result.output.split())
    assert "Traceback" not in result.output
