"""examples/hf_causal_lm_plugin.py: a Hugging Face GPT-2 evaluated as a robench language model."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from typer.testing import CliRunner, Result

import robench.models.zoo  # noqa: F401  (registers the zoo before any registry is swapped)
from robench._core.plugins import plugin_module_name
from robench._core.registry import Registry
from robench.cli import app
from robench.data.text import Vocabulary, training_lines
from robench.models import loading
from robench.models.checkpoints import save_safetensors
from robench.models.spec import ModelSpec, metadata_from_spec
from robench.models.zoo import lm_registry

pytest.importorskip(
    "transformers", reason="the optional extra robench[hf] (Hugging Face transformers)"
)

PLUGIN = Path(__file__).resolve().parents[1] / "examples" / "hf_causal_lm_plugin.py"
# A tiny GPT-2: enough positions for text-smoke's 64-token windows.
GPT2_KWARGS = {"n_positions": 128, "n_embd": 32, "n_layer": 2, "n_head": 2}


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty language-model registry per test, and the plugin not yet imported (a file is
    imported once per process), so each test's `--import` registers the plugin anew."""
    monkeypatch.setattr(lm_registry, "_LANGUAGE_MODELS", Registry("language model"))
    monkeypatch.delitem(sys.modules, plugin_module_name(PLUGIN), raising=False)


@pytest.fixture(scope="module")
def plugin() -> ModuleType:
    """The example module, imported once under a throwaway registry (its builder and class)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lm_registry, "_LANGUAGE_MODELS", Registry("language model"))
        spec = importlib.util.spec_from_file_location("hf_causal_lm_plugin_under_test", PLUGIN)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def vocabulary() -> Vocabulary:
    return Vocabulary.build(training_lines("pydoc-topics"), min_count=3)


@pytest.fixture(scope="module")
def gpt2(plugin: ModuleType, vocabulary: Vocabulary) -> torch.nn.Module:
    torch.manual_seed(0)
    return plugin.hf_gpt2_lm(len(vocabulary), **GPT2_KWARGS).eval()


def _spec_metadata() -> dict[str, str]:
    return metadata_from_spec(ModelSpec(architecture="hf_gpt2_lm", model_kwargs=GPT2_KWARGS))


@pytest.fixture(scope="module")
def checkpoint(
    tmp_path_factory: pytest.TempPathFactory, gpt2: torch.nn.Module, vocabulary: Vocabulary
) -> Path:
    """Random GPT-2 weights with the ModelSpec and the vocabulary in the metadata."""
    path = tmp_path_factory.mktemp("hf") / "gpt2.safetensors"
    save_safetensors(gpt2.state_dict(), path, {**_spec_metadata(), **vocabulary.to_metadata()})
    return path


def _eval(checkpoint: Path, report: Path) -> Result:
    return CliRunner().invoke(
        app,
        [
            "eval",
            "--import",
            str(PLUGIN),
            "-c",
            str(checkpoint),
            "-s",
            "text-smoke",
            "--data",
            "pydoc-topics",
            "--limit",
            "20",
            "-o",
            str(report),
        ],
    )


def test_a_random_gpt2_evaluates_through_the_cli(
    checkpoint: Path, vocabulary: Vocabulary, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    result = _eval(checkpoint, report)
    assert result.exit_code == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["task"] == "language-modeling"
    assert data["model"]["architecture"] == "hf_gpt2_lm"
    assert data["model"]["extensions"]["vocabulary"]["size"] == len(vocabulary)
    clean = next(r for r in data["results"] if r["name"] == "clean")
    assert clean["n_samples"] == 20
    # Random init predicts nearly uniformly: perplexity close to the vocabulary size.
    perplexity = clean["metrics"]["perplexity"]["value"]
    assert 0.3 * len(vocabulary) < perplexity < 3 * len(vocabulary)
    # One record per window with its summed NLL and counts.
    # A line per record (a string may hold spaces, e.g. the device name "cpu (AMD EPYC)").
    lines = report.with_suffix(".samples.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    windows = next(row for row in rows if row.get("p") == "clean")
    for column in ("nll", "tokens", "words", "bytes"):
        assert len(windows[column]) == 20, column


def test_the_loaded_gpt2_is_the_saved_one_and_causal(
    checkpoint: Path, gpt2: torch.nn.Module, vocabulary: Vocabulary
) -> None:
    loaded = loading.load_model(None, checkpoint=checkpoint, imports=(str(PLUGIN),))
    assert loaded.task == "language-modeling" and loaded.vocabulary == vocabulary
    model = loaded.model
    hf: Any = model.model  # the wrapped GPT2LMHeadModel
    assert hf.lm_head.weight is hf.transformer.wte.weight  # still tied after the strict load
    tokens = torch.randint(len(vocabulary), (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = model(tokens)
        torch.testing.assert_close(logits, gpt2(tokens))  # the saved weights, not a fresh init
        assert logits.shape == (2, 16, len(vocabulary))
        t = 7
        changed = tokens.clone()
        changed[:, t + 1] = (changed[:, t + 1] + 1) % len(vocabulary)
        other = model(changed)
    torch.testing.assert_close(other[:, : t + 1], logits[:, : t + 1], rtol=0, atol=1e-6)
    assert not torch.allclose(other[:, t + 1], logits[:, t + 1])


def test_a_checkpoint_without_vocabulary_is_a_usage_error(
    gpt2: torch.nn.Module, tmp_path: Path
) -> None:
    bare = tmp_path / "no-vocabulary.safetensors"
    save_safetensors(gpt2.state_dict(), bare, _spec_metadata())
    report = tmp_path / "report.json"
    result = _eval(bare, report)
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "vocabulary" in lines[0]
    assert not report.exists()
