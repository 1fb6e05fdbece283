"""`robench train` of text classifiers: training, checkpoints, fine-tuning a pretrained Switch
LM's backbone, and the errors a user meets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from robench.cli import app
from robench.data.text import Vocabulary
from robench.data.text.classifier_tokens import classes_from_metadata, encode_texts
from robench.models.checkpoints import read_checkpoint
from robench.models.spec import spec_from_metadata
from robench.models.zoo.lm_registry import create_language_model
from robench.models.zoo.text_classifier import backbone_keys
from robench.training.train_text import TextTrainConfig, train_text_classifier

TINY = {"embed_dim": 16, "num_heads": 2, "mlp_dim": 16, "depth": 2, "max_length": 8}
TINY_LM = {"embed_dim": 16, "num_heads": 2, "mlp_dim": 16, "depth": 2}
WORDS = {"cats": "purr meow whiskers paws nap", "cars": "engine wheel brake fuel road"}


def _write_split(path: Path, n: int, seed: int) -> None:
    """n texts of each class, drawn from the class's own words."""
    generator = torch.Generator().manual_seed(seed)
    lines = []
    for _ in range(n):
        for label, words in WORDS.items():
            pool = words.split()
            picks = torch.randint(len(pool), (5,), generator=generator).tolist()
            lines.append(json.dumps({"text": " ".join(pool[p] for p in picks), "label": label}))
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("texts")
    _write_split(root / "train.jsonl", 32, 0)
    _write_split(root / "test.jsonl", 8, 1)
    return root


@pytest.fixture(scope="module")
def trained(data: Path, tmp_path_factory: pytest.TempPathFactory):
    config = TextTrainConfig(
        model="text_classifier_nano_elliptical",
        data=str(data),
        out_dir=tmp_path_factory.mktemp("run"),
        batch_size=8,
        max_steps=24,
        val_every=1,
        warmup_steps=2,
        lr=3e-3,
        vocab_min_count=1,
        model_kwargs=dict(TINY),
    )
    return train_text_classifier(config)


def test_training_lowers_the_loss_and_learns_the_classes(trained) -> None:
    losses = [row["loss"] for row in trained.history]
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5
    assert trained.best_val == 1.0  # the two classes share no word
    assert trained.majority_share == 0.5
    assert trained.classes == ("cars", "cats")


def test_the_checkpoint_carries_vocabulary_classes_and_settings(trained, data: Path) -> None:
    checkpoint = read_checkpoint(trained.best_path)
    vocabulary = Vocabulary.from_metadata(checkpoint.metadata)
    spec = spec_from_metadata(checkpoint.metadata, checkpoint.path)
    assert vocabulary is not None and "purr" in vocabulary
    assert classes_from_metadata(checkpoint.metadata) == ("cars", "cats")
    assert spec is not None and spec.architecture == "text_classifier_nano_elliptical"
    assert spec.num_classes == 2 and spec.model_kwargs["num_classes"] == 2
    training = json.loads(checkpoint.metadata["robench.training.train"])
    assert training["config"]["seed"] == 0 and training["val_top1"] == 1.0
    model = create_language_model(spec.architecture, len(vocabulary), **spec.model_kwargs)
    model.load_state_dict(checkpoint.state_dict)
    model.eval()
    ids = encode_texts(vocabulary, ["purr nap paws", "fuel road brake"], 8)
    with torch.no_grad():
        assert model(ids).argmax(-1).tolist() == [1, 0]


@pytest.fixture(scope="module")
def switch_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Switch LM pretrained for a few steps through the language-model path."""
    out = tmp_path_factory.mktemp("switch-lm")
    args = [
        "train",
        "switch_lm_nano",
        "--data",
        "pydoc-topics",
        "--max-steps",
        "3",
        "--batch-size",
        "4",
        "--target-length",
        "16",
        "--val-limit",
        "2",
        "--vocab-size",
        "500",
        "--model-kwargs",
        json.dumps(TINY_LM),
        "-o",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "best validation perplexity" in result.output
    return out / "best.safetensors"


def test_fine_tuning_starts_from_the_language_models_backbone(
    switch_lm: Path, data: Path, tmp_path: Path
) -> None:
    config = TextTrainConfig(
        model="switch_classifier_nano",
        data=str(data),
        out_dir=tmp_path,
        batch_size=8,
        max_steps=2,
        val_every=2,
        lr=1e-12,  # the weights stay (to float precision) where --init-from put them
        warmup_steps=0,
        init_from=switch_lm,
        model_kwargs={**TINY_LM, "max_length": 8},
    )
    result = train_text_classifier(config)
    lm = read_checkpoint(switch_lm)
    tuned = read_checkpoint(result.last_path)
    assert Vocabulary.from_metadata(tuned.metadata) == Vocabulary.from_metadata(lm.metadata)
    for key, value in backbone_keys(lm.state_dict).items():
        assert torch.allclose(tuned.state_dict[key], value, atol=1e-6), key


def _train(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["train", *args])
    return result.exit_code, result.output


def test_bad_inputs_are_one_sentence_and_exit_2(
    data: Path, switch_lm: Path, tmp_path: Path
) -> None:
    unlabelled = tmp_path / "unlabelled"
    unlabelled.mkdir()
    for split in ("train", "test"):
        (unlabelled / f"{split}.jsonl").write_text('{"text": "a b c"}\n')
    small = ["--model-kwargs", json.dumps(TINY), "--max-steps", "1", "-o", str(tmp_path / "o")]
    cases = {
        "does not exist": ["text_classifier_nano", "--data", str(tmp_path / "nope"), *small],
        "without labels": ["text_classifier_nano", "--data", "python-docs", *small],
        "no labels": ["text_classifier_nano", "--data", str(unlabelled), *small],
        "switch_lm_nano_elliptical": [
            "switch_classifier_nano_elliptical",
            "--data",
            str(data),
            "--init-from",
            str(switch_lm),
            *small,
        ],
        "batch-size": ["text_classifier_nano", "--data", str(data), "--batch-size", "0", *small],
        "not a text classifier": ["vit_nano_patch4_28", "--init-from", str(switch_lm), *small],
        # An LRA sequence classifier once took --init-from and ignored it.
        "lra_transformer_nano is not a text classifier": [
            "lra_transformer_nano",
            "--init-from",
            str(switch_lm),
            *small,
        ],
    }
    for expected, args in cases.items():
        code, output = _train(*args)
        assert code == 2, (expected, output)
        assert expected in " ".join(output.split()), (expected, output)
        assert "Traceback" not in output


def test_a_glue_sst2_folder_validates_on_its_labelled_dev_split(tmp_path: Path) -> None:
    """GLUE's test.tsv has no labels: the trainer validates on dev.tsv, as eval reads it."""
    rows = "sentence\tlabel\ngood fun movie \t1\nbad dull film \t0\ngreat fun \t1\nawful bad \t0\n"
    for split in ("train", "dev"):
        (tmp_path / f"{split}.tsv").write_text(rows)
    (tmp_path / "test.tsv").write_text("index\tsentence\n0\tgood\n")
    out = tmp_path / "run"
    small = ["--model-kwargs", json.dumps(TINY), "--max-steps", "2", "--batch-size", "2"]
    code, output = _train("text_classifier_nano", "--data", str(tmp_path), *small, "-o", str(out))
    assert code == 0, output
    assert "2 classes" in output and (out / "best.safetensors").is_file()
