"""A transformers `AutoModelForSequenceClassification` folder as a robench text classifier.

The folder (`save_pretrained` of the model and its tokenizer) is read offline; the model is
wrapped by `text_inputs.TokenizerTextClassifier`, which takes texts as the task's byte rows
and tokenizes them with the folder's own tokenizer (truncated at the model's context, at most
512 tokens, padded to the longest text of a call, with the attention mask). Class names come
from the config's `id2label`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MAX_TOKENS = 512  # tokens read of a text at most (BERT-style models' usual context)


def load_tokenizer(folder: Path, trust_remote_code: bool) -> Any:
    """The folder's tokenizer (`hf_causal_lm.read_tokenizer`), padding with EOS when it has
    no pad token (GPT-2 style; padded positions are masked anyway)."""
    from robench.models.sources.hf_causal_lm import read_tokenizer

    tokenizer = read_tokenizer(folder, trust_remote_code, "a text classifier")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def class_names(network: Any) -> list[str]:
    """The config's labels in index order."""
    config = network.config
    labels = getattr(config, "id2label", None) or {}
    return [str(labels.get(i, labels.get(str(i), i))) for i in range(config.num_labels)]


def max_tokens(network: Any, tokenizer: Any) -> int:
    """The context the texts are truncated to: the model's, at most MAX_TOKENS."""
    from robench.models.sources.hf_causal_lm import resolve_max_length

    return min(resolve_max_length(network.config, tokenizer), MAX_TOKENS)
