"""A transformers `AutoModelForSequenceClassification` folder (`hf:FOLDER`) as a text
classifier: its predictions equal transformers' own (tokenizer + model, argmax) on the same
SST-2 sentences, its classes come from id2label, and DeepWordBug runs against it."""

from __future__ import annotations

from pathlib import Path

import pytest
import text_classifier_fixture as fixture
import torch

from robench.evaluation.request import EvalRequest, evaluate
from robench.models.loading import load_model

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer BERT with a word-level tokenizer of the fixture's words, seeded weights."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *fixture.vocabulary().words[2:]]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]",
    )  # fmt: skip
    config = BertConfig(
        vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, num_labels=2,
        id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1},
    )  # fmt: skip
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    path = tmp_path_factory.mktemp("hf") / "bert"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_predictions_equal_transformers_own(folder: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    data = fixture.write_sst2(tmp_path / "SST-2")
    report = evaluate(
        EvalRequest(
            suite="text-classification-smoke",
            data=str(data),
            out=tmp_path / "r.json",
            model=f"hf:{folder}",
            batch_size=5,
        )
    )
    assert report.task == "text-classification"
    samples = report.samples["default"]
    texts = [fixture.SENTENCES[i][0] for i in samples.indices]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        logits = model(**tokenizer(texts, padding=True, return_tensors="pt")).logits
    assert samples.values["clean"]["prediction"] == logits.argmax(dim=1).tolist()
    attacked = samples.values["deepwordbug"]["outcome"]
    assert set(attacked) <= {"skipped", "succeeded", "failed"} and len(attacked) == len(texts)


def test_classes_come_from_id2label(folder: Path) -> None:
    loaded = load_model(f"hf:{folder}")
    assert loaded.task == "text-classification"
    assert loaded.spec.classes == ["negative", "positive"]
