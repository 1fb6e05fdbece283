"""`robench train CARD`: fine-tuning from a shipped model card, language model or image model.

`robench train transformer_lm_nano_pydocs` once ended in "unexpected AssertionError" (it was
sent to the image trainer); it now starts from the card's checkpoint and vocabulary.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robench.cli import app
from robench.data.text import Vocabulary
from robench.models.checkpoints import read_checkpoint
from robench.models.spec import bundled_cards
from robench.training.train_lm import trains_a_language_model

ROOT = Path(__file__).resolve().parents[1]
LM_CARD = "transformer_lm_nano_pydocs"


def test_a_language_model_card_trains_as_a_language_model() -> None:
    assert trains_a_language_model(LM_CARD)
    assert trains_a_language_model(str(bundled_cards()[LM_CARD]))
    assert trains_a_language_model("transformer_lm_nano")
    assert not trains_a_language_model("vit_nano_elliptical_fmnist")
    assert not trains_a_language_model("vit_nano_patch4_28")


@pytest.mark.slow
def test_training_from_a_language_model_card_fine_tunes_its_checkpoint(tmp_path: Path) -> None:
    args = ["train", LM_CARD, "--data", "pydoc-topics", "--max-steps", "2", "--val-limit", "4"]
    result = CliRunner().invoke(app, [*args, "--target-length", "64", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    card = read_checkpoint(ROOT / "models" / f"{LM_CARD}.safetensors")
    tuned = read_checkpoint(tmp_path / "best.safetensors")
    card_words = Vocabulary.from_metadata(card.metadata).words  # type: ignore[union-attr]
    assert Vocabulary.from_metadata(tuned.metadata).words == card_words  # type: ignore[union-attr]
    training = json.loads(tuned.metadata["robench.training.train"])
    # From the card's weights two steps already predict far better than chance (a new model
    # starts at the vocabulary size, about 8000).
    assert training["val_perplexity"] < 1000 < len(card_words)
    assert math.isfinite(training["val_perplexity"])
    evaluate = ["eval", "-c", str(tmp_path / "best.safetensors"), "-s", "text-smoke"]
    evaluate += ["--data", "pydoc-topics", "--limit", "2", "-o", str(tmp_path / "r.json")]
    evaluated = CliRunner().invoke(app, evaluate)
    assert evaluated.exit_code == 0, evaluated.output


def test_a_word_outside_the_cards_vocabulary_is_one_sentence(tmp_path: Path) -> None:
    out = tmp_path / "tr"
    args = ["train", LM_CARD, "--data", "pydoc-topics", "--extra-word", "ZZZQ", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "lacks ZZZQ" in result.stderr and "transformer_lm_nano" in result.stderr
    assert "Traceback" not in result.output and not out.exists()


@pytest.mark.slow
def test_training_from_an_image_model_card_fine_tunes_its_checkpoint(tmp_path: Path) -> None:
    args = ["train", "vit_nano_elliptical_fmnist", "--max-steps", "2", "--train-limit", "256"]
    result = CliRunner().invoke(app, [*args, "--val-limit", "256", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    training = json.loads(
        read_checkpoint(tmp_path / "best.safetensors").metadata["robench.training.train"]
    )
    assert training["val_top1"] > 0.6  # the card's accuracy, not a new model's 10-20%
