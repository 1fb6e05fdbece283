"""A text classifier nobody tuned, for the text-classification tests: a bag of words whose
weights are set by hand (positive and negative words), saved as robench's zoo classifiers
are (a safetensors checkpoint with its vocabulary and class names).

Importing the module registers `bag_of_words_classifier` (as `--import` does for the CLI).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from robench.data.text.classifier_tokens import PAD_ID, classes_metadata
from robench.data.text.vocabulary import Vocabulary
from robench.models.checkpoints import save_safetensors
from robench.models.spec import ModelSpec, metadata_from_spec
from robench.models.zoo.lm_registry import register_language_model

POSITIVE = ("good", "great", "fine", "lovely", "wonderful", "best", "moving")
NEGATIVE = ("bad", "awful", "boring", "worst", "dull", "poor", "mess")
NEUTRAL = ("the", "a", "film", "movie", "plot", "acting", "and", "is", "was", "it", "story")
CLASSES = ("negative", "positive")


class BagOfWords(nn.Module):
    robench_task = "text-classification"

    def __init__(self, vocab_size: int, num_classes: int = 2, max_length: int = 32) -> None:
        super().__init__()
        self.vocab_size, self.num_classes, self.max_length = vocab_size, num_classes, max_length
        self.weights = nn.Embedding(vocab_size + 1, num_classes)  # last row: padding
        self.bias = nn.Parameter(torch.zeros(num_classes))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        ids = tokens[:, : self.max_length]
        ids = torch.where(ids == PAD_ID, self.vocab_size, ids)
        padded = nn.functional.pad(ids, (0, self.max_length - ids.shape[1]), value=self.vocab_size)
        return self.weights(padded).sum(dim=1) + self.bias


@register_language_model
def bag_of_words_classifier(vocab_size: int, **kwargs: Any) -> BagOfWords:
    return BagOfWords(vocab_size, **kwargs)


def vocabulary() -> Vocabulary:
    return Vocabulary(("<eos>", "<unk>", *POSITIVE, *NEGATIVE, *NEUTRAL))


def write_checkpoint(path: Path) -> Path:
    """The hand-set classifier: +1 per positive word for `positive`, per negative word for
    `negative`; a slight bias towards `positive` (so an empty text has a class)."""
    vocab = vocabulary()
    model = BagOfWords(len(vocab))
    with torch.no_grad():
        model.weights.weight.zero_()
        for word in POSITIVE:
            model.weights.weight[vocab.id_of(word), 1] = 1.0
        for word in NEGATIVE:
            model.weights.weight[vocab.id_of(word), 0] = 1.0
        model.bias.copy_(torch.tensor([0.0, 0.1]))
    spec = ModelSpec(architecture="bag_of_words_classifier")
    metadata = metadata_from_spec(spec) | vocab.to_metadata() | classes_metadata(CLASSES)
    save_safetensors(model.state_dict(), path, metadata)
    return path


SENTENCES = (
    ("a good film", 1), ("the acting is awful", 0), ("a great and moving story", 1),
    ("boring plot and dull acting", 0), ("it was fine", 1), ("the worst movie", 0),
    ("a lovely film", 1), ("the plot is a mess", 0), ("wonderful acting", 1),
    ("it was bad", 0), ("the best story", 1), ("poor acting and a boring plot", 0),
    ("the film was good but the plot was bad", 1), ("a film", 0), ("great", 1), ("dull", 0),
)  # fmt: skip


def write_sst2(folder: Path) -> Path:
    """GLUE's SST-2 layout: dev.tsv with a `sentence\\tlabel` header."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["sentence\tlabel", *(f"{text}\t{label}" for text, label in SENTENCES)]
    (folder / "dev.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder
