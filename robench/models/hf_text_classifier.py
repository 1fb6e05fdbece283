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

from robench._core.errors import ConfigError, first_line

MAX_TOKENS = 512  # tokens read of a text at most (BERT-style models' usual context)
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "tokenizer.model")


def load_tokenizer(folder: Path, trust_remote_code: bool) -> Any:
    """The folder's tokenizer, offline; one sentence when it has none or it cannot be read."""
    from transformers import AutoTokenizer

    if not any((folder / name).is_file() for name in _TOKENIZER_FILES):
        raise ConfigError(
            f"{folder} holds a text classifier but no tokenizer (none of "
            f"{', '.join(_TOKENIZER_FILES)}); save it into the same folder with "
            "`tokenizer.save_pretrained(folder)`."
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            folder, local_files_only=True, trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"the tokenizer in {folder} cannot be read ({first_line(error)}); save it again "
            "with `tokenizer.save_pretrained(folder)`."
        ) from None
    if tokenizer.pad_token is None:  # GPT-2 style: pad with EOS, masked anyway
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def class_names(network: Any) -> list[str]:
    """The config's labels in index order."""
    config = network.config
    labels = getattr(config, "id2label", None) or {}
    return [str(labels.get(i, labels.get(str(i), i))) for i in range(config.num_labels)]


def max_tokens(network: Any, tokenizer: Any) -> int:
    """The context the texts are truncated to: the model's, at most MAX_TOKENS."""
    from robench.models.hf_causal_lm import resolve_max_length

    return min(resolve_max_length(network.config, tokenizer), MAX_TOKENS)
