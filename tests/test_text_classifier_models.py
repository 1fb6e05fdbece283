"""robench's text classifiers: shapes, padding, Elliptical layers, the Switch backbone."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from robench._core.errors import ConfigError, DataError
from robench.data.text import Vocabulary
from robench.data.text.classifier_tokens import PAD_ID, encode_texts
from robench.diagnostics.capture import find_transformer
from robench.models.layers.elliptical_attention import EllipticalAttention
from robench.models.layers.mixture_of_experts import MixtureOfExperts
from robench.models.zoo.lm_registry import (
    create_language_model,
    language_model_task,
    list_language_models,
)
from robench.models.zoo.text_classifier import PRETRAINED_BACKBONES, TextClassifier, backbone_keys

VOCAB = 30
NAMES = sorted(
    list_language_models("text_classifier_*") + list_language_models("switch_classifier_*")
)
TINY: dict[str, Any] = dict(embed_dim=16, num_heads=2, mlp_dim=16, max_length=12)


def _model(name: str = "text_classifier_nano_elliptical", **kwargs: Any) -> TextClassifier:
    torch.manual_seed(0)
    model = create_language_model(name, VOCAB, **{"num_classes": 3, **TINY, **kwargs})
    assert isinstance(model, TextClassifier)
    return model.eval()


def _rows(*lengths: int, width: int | None = None, seed: int = 0) -> torch.Tensor:
    """Random texts of the given word counts, padded with PAD_ID to `width` columns."""
    width = width or max(lengths)
    generator = torch.Generator().manual_seed(seed)
    ids = torch.full((len(lengths), width), PAD_ID)
    for row, n in enumerate(lengths):
        ids[row, :n] = torch.randint(VOCAB, (n,), generator=generator)
    return ids


def test_the_registry_declares_text_classification() -> None:
    assert NAMES == [
        "switch_classifier_nano",
        "switch_classifier_nano_elliptical",
        "text_classifier_nano",
        "text_classifier_nano_elliptical",
    ]
    assert all(language_model_task(name) == "text-classification" for name in NAMES)
    assert set(PRETRAINED_BACKBONES) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_classifier_gives_class_logits_and_the_attributes_robench_reads(name: str) -> None:
    model = _model(name)
    logits = model(_rows(5, 12, 3))
    assert logits.shape == (3, 3) and torch.isfinite(logits).all()
    assert model.robench_task == "text-classification"
    assert (model.num_classes, model.max_length, model.vocab_size) == (3, 12, VOCAB)
    assert model.architecture == name
    assert (model.num_prefix_tokens, model.has_class_token) == (0, False)
    assert find_transformer(model) is not None
    elliptical = [m for m in model.modules() if isinstance(m, EllipticalAttention)]
    assert bool(elliptical) == name.endswith("_elliptical")
    assert all(layer.causal_estimator == "full" for layer in elliptical)
    has_experts = any(isinstance(m, MixtureOfExperts) for m in model.modules())
    assert has_experts == name.startswith("switch_")
    assert (model.aux_loss is not None) == has_experts


@pytest.mark.parametrize("name", NAMES)
def test_a_texts_logits_do_not_depend_on_its_batch(name: str) -> None:
    """Alone, or in a batch of longer (wider than max_length) and shorter texts: the same."""
    model = _model(name)
    text = _rows(6, seed=1)
    others = _rows(20, 2, 0, width=20, seed=2)
    batch = torch.cat([torch.nn.functional.pad(text, (0, 14), value=PAD_ID), others])
    with torch.no_grad():
        alone, together = model(text), model(batch)
    assert torch.allclose(alone[0], together[0], atol=1e-6)


def test_padding_beyond_max_length_and_cutting_agree() -> None:
    model = _model()
    ids = _rows(20, width=20)
    with torch.no_grad():
        assert torch.equal(model(ids), model(ids[:, :12]))
        padded = torch.nn.functional.pad(ids[:, :5], (0, 30), value=PAD_ID)
        assert torch.equal(model(ids[:, :5]), model(padded))


def test_an_all_padding_row_gives_finite_logits() -> None:
    model = _model()
    with torch.no_grad():
        logits = model(torch.full((2, 7), PAD_ID))
    assert torch.isfinite(logits).all()


def test_bad_token_ids_are_one_sentence() -> None:
    model = _model()
    with pytest.raises(DataError, match="outside"):
        model(torch.tensor([[VOCAB, 1]]))
    with pytest.raises(DataError, match="shape"):
        model(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ConfigError, match="elliptical options"):
        _model("text_classifier_nano", delta=2.0)


def test_encoded_texts_read_as_the_contract_says() -> None:
    vocabulary = Vocabulary.build([["a", "b", "c"]])
    ids = encode_texts(vocabulary, ["a b", "c c c a", ""], 4)
    model = create_language_model("text_classifier_nano", len(vocabulary), num_classes=2).eval()
    with torch.no_grad():
        assert model(ids).shape == (3, 2)


def test_the_backbone_keys_are_the_language_models() -> None:
    for classifier, lm in PRETRAINED_BACKBONES.items():
        kwargs = {"embed_dim": 16, "num_heads": 2, "mlp_dim": 16}
        lm_keys = backbone_keys(create_language_model(lm, VOCAB, **kwargs).state_dict())
        own = backbone_keys(_model(classifier).state_dict())
        assert {k: v.shape for k, v in own.items()} == {k: v.shape for k, v in lm_keys.items()}


@pytest.mark.parametrize("variant", ["baseline", "elliptical"])
def test_the_shipped_checkpoints_rebuild_from_their_metadata(variant: str) -> None:
    from pathlib import Path

    from robench.data.text.classifier_tokens import classes_from_metadata
    from robench.models.checkpoints import read_checkpoint
    from robench.models.spec import read_card, spec_from_metadata

    card_path = (
        Path(__file__).resolve().parents[1]
        / "models"
        / (f"text_classifier_nano_{variant}_docs.toml")
    )
    card = read_card(card_path)
    checkpoint = read_checkpoint(card_path.with_suffix(".safetensors"))
    assert card_path.with_suffix(".safetensors").stat().st_size < 5_000_000
    spec = spec_from_metadata(checkpoint.metadata, checkpoint.path)
    vocabulary = Vocabulary.from_metadata(checkpoint.metadata)
    classes = classes_from_metadata(checkpoint.metadata)
    assert spec is not None and vocabulary is not None and classes is not None
    assert spec.architecture == card.architecture and len(classes) == 8
    model = create_language_model(spec.architecture, len(vocabulary), **spec.model_kwargs)
    model.load_state_dict(checkpoint.state_dict)
    model.eval()
    text = "The C API function PyObject_GetAttr returns a new reference to the attribute."
    with torch.no_grad():
        logits = model(encode_texts(vocabulary, [text], model.max_length))
    assert logits.shape == (1, 8) and torch.isfinite(logits).all()
    assert card.metrics["clean_top1"] > card.metrics["majority_class_top1"] + 0.2
