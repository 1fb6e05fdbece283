"""Hostile transformers folders (issue 39): truncated or empty weights, a config.json field of
the wrong type, a tokenizer.json that is not a tokenizer and weights that do not fit the
config are each one sentence naming the file and the fix, exit 2, nothing written; the
mismatch does not print transformers' load report first."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from hostile import refused

from robench._core.errors import RobenchError
from robench.models.loading import load_model

pytest.importorskip("transformers", reason="the optional extra robench[hf] (transformers)")


@pytest.fixture(scope="module")
def vit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer ViT for Fashion-MNIST's 28x28 grey images, seeded weights."""
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    torch.manual_seed(0)
    config = ViTConfig(
        image_size=28, patch_size=7, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, num_labels=10, num_channels=1,
    )  # fmt: skip
    folder = tmp_path_factory.mktemp("vit") / "vit"
    ViTForImageClassification(config).save_pretrained(folder)
    processor = ViTImageProcessor(
        size={"height": 28, "width": 28}, image_mean=[0.5], image_std=[0.5]
    )
    processor.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_causal_lm import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("lm") / "lm")


def _cut(name: str, keep: int) -> Callable[[Path], str]:
    def change(folder: Path) -> str:
        raw = (folder / name).read_bytes()
        (folder / name).write_bytes(raw[:keep])  # a negative `keep` drops the end
        return name

    return change


def _config(**fields: object) -> Callable[[Path], str]:
    def change(folder: Path) -> str:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        (folder / "config.json").write_text(json.dumps({**config, **fields}), encoding="utf-8")
        return "config.json"

    return change


def _not_a_tokenizer(folder: Path) -> str:
    (folder / "tokenizer.json").write_text(json.dumps({"hello": "world"}), encoding="utf-8")
    return "tokenizer.json"


VIT_CASES = {
    "empty weights": (_cut("model.safetensors", 0), "cannot read safetensors file"),
    "truncated weights": (_cut("model.safetensors", 1000), "truncated"),
    "cut before the end": (_cut("model.safetensors", -1), "truncated"),
    "num_channels a string": (_config(num_channels="three"), "'num_channels'"),
    "hidden_size a string": (_config(hidden_size="big"), "'hidden_size'"),
    "weights of another size": (_config(hidden_size=64, intermediate_size=128), "do not fit"),
}


@pytest.mark.parametrize("case", list(VIT_CASES))
def test_eval_refuses_a_broken_image_classifier_folder(
    vit: Path, tmp_path: Path, case: str
) -> None:
    change, expected = VIT_CASES[case]
    folder = tmp_path / "model"
    shutil.copytree(vit, folder)
    bad_file = change(folder)
    args = ["eval", f"hf:{folder}", "-s", "smoke", "--limit", "4", "-o", tmp_path / "r.json"]
    refused(args, tmp_path, expected, str(folder), "again" if "fit" not in expected else "same")
    if case != "weights of another size":
        assert bad_file in refused(args, tmp_path)


LM_CASES = {
    "truncated weights": (_cut("model.safetensors", 2000), "cannot read safetensors file"),
    "n_embd a string": (_config(n_embd="wide"), "'n_embd'"),
    "weights of another size": (_config(n_embd=64), "do not fit"),
    "tokenizer.json not a tokenizer": (_not_a_tokenizer, "tokenizer.json is not a tokenizer"),
}


@pytest.mark.parametrize("case", list(LM_CASES))
def test_a_broken_causal_lm_folder_is_one_sentence(
    lm: Path, tmp_path: Path, case: str, capfd: pytest.CaptureFixture[str]
) -> None:
    change, expected = LM_CASES[case]
    folder = tmp_path / "model"
    shutil.copytree(lm, folder)
    change(folder)
    with pytest.raises(RobenchError, match=expected) as caught:
        load_model(f"hf:{folder}")
    assert str(folder) in str(caught.value) and "\n" not in str(caught.value)
    assert "LOAD REPORT" not in capfd.readouterr().err  # transformers' table is held back


def test_a_text_classifier_with_a_broken_tokenizer_is_refused(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "good", "bad"]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]")
    config = BertConfig(
        vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=32, num_labels=2,
    )  # fmt: skip
    folder = tmp_path / "bert"
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    _not_a_tokenizer(folder)
    data = tmp_path / "t.jsonl"
    data.write_text('{"text": "good", "label": 1}\n{"text": "bad", "label": 0}\n')
    args = ["eval", f"hf:{folder}", "-s", "text-classification-smoke", "-d", data]
    refused([*args, "-o", tmp_path / "r.json"], tmp_path, f"{folder}/tokenizer.json", "save")
