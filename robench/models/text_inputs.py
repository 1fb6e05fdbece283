"""Text classifiers that read texts, as the text-classification task hands them over: rows of
UTF-8 bytes (data/text/text_rows.py), turned into what the network reads inside the model, as
`NormalizedModel` normalises images inside an image model. Either wrapper returns (B, K).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from robench.data.text.classifier_tokens import encode_texts
from robench.data.text.text_rows import decode_rows
from robench.data.text.vocabulary import Vocabulary

DEFAULT_MAX_LENGTH = 128  # words read of a text when the network names no max_length


class WordLevelTextClassifier(nn.Module):
    """A robench zoo classifier (ids (B, T), -1 padded -> logits) reading byte rows through
    its checkpoint's `Vocabulary`: exactly the network's `max_length` ids per row
    (data/text/classifier_tokens.py), so a row's logits do not depend on its batch."""

    robench_task = "text-classification"

    def __init__(self, network: nn.Module, vocabulary: Vocabulary) -> None:
        super().__init__()
        self.network = network
        self.vocabulary = vocabulary
        self.max_length = int(getattr(network, "max_length", DEFAULT_MAX_LENGTH))

    def encode(self, texts: list[str]) -> torch.Tensor:
        """The network's token ids of `texts`."""
        return encode_texts(self.vocabulary, texts, self.max_length)

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        ids = self.encode(decode_rows(rows)).to(rows.device)
        logits: torch.Tensor = self.network(ids)
        return logits


class TokenizerTextClassifier(nn.Module):
    """A transformers `AutoModelForSequenceClassification` reading byte rows through its own
    tokenizer (truncated at `max_length` tokens, padded to the longest text, masked)."""

    robench_task = "text-classification"

    def __init__(self, network: nn.Module, tokenizer: Any, max_length: int) -> None:
        super().__init__()
        self.network = network
        self.tokenizer = tokenizer
        self.max_length = max_length

    def forward(self, rows: torch.Tensor) -> torch.Tensor:
        encoded = self.tokenizer(
            decode_rows(rows),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        ).to(rows.device)
        if encoded["input_ids"].shape[1] == 0:  # only empty texts, no special tokens added
            pad = self.tokenizer.pad_token_id or 0
            encoded["input_ids"] = torch.full((len(rows), 1), pad, device=rows.device)
            encoded["attention_mask"] = torch.ones_like(encoded["input_ids"])
        logits: torch.Tensor = self.network(**encoded).logits
        return logits
