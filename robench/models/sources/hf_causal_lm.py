"""A transformers causal LM from a local folder, as robench's language-modeling task runs it
(docs/language-models.md, "Subword models").

`build_causal_lm(folder, trust_remote_code=...)` reads a `save_pretrained` folder offline and
returns `CausalLMParts`: token ids (B, T) -> logits (B, T, V), the folder's tokenizer, the
maximum context and provenance. The context is read as lm-evaluation-harness 0.4.13 reads it
(`resolve_max_length`), so both score the same rolling windows. transformers is imported
inside the functions: `robench --help` and `robench list` stay light.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import Tensor, nn

from robench._core.errors import CheckpointError, ConfigError, first_line
from robench.models.sources.hf_folder_checks import (
    check_safetensors,
    check_tokenizer_json,
    load_report_held,
    read_config,
)

# Config attributes that give a model's context length, in lm-eval's order.
_CONTEXT_ATTRIBUTES = ("n_positions", "max_position_embeddings", "n_ctx")
# transformers' "no limit" value of `model_max_length`, and lm-eval's default then.
_TOKENIZER_INFINITY = 1000000000000000019884624838656
_DEFAULT_MAX_LENGTH = 2048
# Files a tokenizer may be saved as; their sha256 identifies it in the report.
_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "vocab.txt",
    "added_tokens.json",
)


@dataclass
class CausalLMParts:
    """What robench needs of a transformers causal LM (LoadedModel's language-model fields)."""

    # Eval mode; token ids (B, T) -> logits (B, T, V) (transformers' output unwrapped).
    model: nn.Module
    # The transformers tokenizer saved in the same folder.
    tokenizer: Any
    # The model's maximum context in tokens: the length of the rolling windows.
    max_length: int
    # Provenance merged into the report: tokenizer hash, architecture, dtype.
    info: dict[str, Any] = field(default_factory=dict)


class CausalLMLogits(nn.Module):
    """A transformers `*ForCausalLM` whose forward takes token ids and returns the logits."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        # The output size, for the task's bound on the logits held at once.
        head: Any = model.get_output_embeddings()  # type: ignore[operator]
        self.vocab_size = int(head.weight.shape[0])

    def forward(self, tokens: Tensor) -> Tensor:  # (B, T) -> (B, T, V)
        # No cache: every window is scored in one pass and the cache would only cost memory.
        return self.model(input_ids=tokens, use_cache=False).logits


def tokenizer_sha256(folder: Path) -> str:
    """sha256 over the tokenizer files of `folder` (name and bytes, in name order)."""
    digest = hashlib.sha256()
    for name in sorted(_TOKENIZER_FILES):
        path = folder / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def resolve_max_length(config: Any, tokenizer: Any) -> int:
    """The context length lm-eval 0.4.13 uses for this config and tokenizer."""
    config = getattr(config, "text_config", None) or config
    for attribute in _CONTEXT_ATTRIBUTES:
        value = getattr(config, attribute, None)
        if value is not None:
            return int(value)
    limit = getattr(tokenizer, "model_max_length", None)
    if limit is not None and limit != _TOKENIZER_INFINITY:
        return int(limit)
    return _DEFAULT_MAX_LENGTH


def read_tokenizer(folder: Path, trust_remote_code: bool, holds: str) -> Any:
    """The tokenizer saved in `folder` beside its model (`holds`: what the folder holds, for
    the error), offline; one sentence when it has none or it cannot be read."""
    from transformers import AutoTokenizer

    if not any((folder / name).is_file() for name in _TOKENIZER_FILES):
        raise ConfigError(
            f"{folder} holds {holds} but no tokenizer (none of "
            f"{', '.join(_TOKENIZER_FILES[:3])}, ...); save the tokenizer into the same folder "
            "with `tokenizer.save_pretrained(folder)`."
        )
    check_tokenizer_json(folder)
    try:
        return AutoTokenizer.from_pretrained(
            folder, local_files_only=True, trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ConfigError(
            f"the tokenizer in {folder} cannot be read ({first_line(error)}); save it again "
            "with `tokenizer.save_pretrained(folder)`."
        ) from None


def check_tokenizer(tokenizer: Any, vocab_size: int | None, whose: str) -> None:
    """Refuse a tokenizer (`whose`: "the tokenizer in FOLDER") with neither BOS nor EOS, or
    with more tokens than the model's `vocab_size` outputs (None: not known yet)."""
    if tokenizer.bos_token_id is None and tokenizer.eos_token_id is None:
        raise ConfigError(
            f"{whose} has neither a BOS nor an EOS token, so the first token of a document has "
            "nothing to be predicted from; set one (e.g. `tokenizer.eos_token = ...`)."
        )
    if vocab_size is not None and len(tokenizer) > vocab_size:
        raise ConfigError(
            f"{whose} has {len(tokenizer):,} tokens but the model predicts only {vocab_size:,}; "
            "the tokenizer must be the model's (resize the embeddings after adding tokens)."
        )


def _load_model(folder: Path, config: Any, trust_remote_code: bool) -> nn.Module:
    from transformers import AutoModelForCausalLM

    check_safetensors(sorted(folder.glob("*.safetensors")))
    try:
        # dtype "auto": the checkpoint's own dtype, as lm-eval's `--model hf` loads it.
        with load_report_held(folder):
            return AutoModelForCausalLM.from_pretrained(
                folder,
                config=config,
                local_files_only=True,
                trust_remote_code=trust_remote_code,
                dtype="auto",
            )
    except ValueError as error:
        raise ConfigError(
            f"{folder} is not a causal language model transformers knows ({first_line(error)}); "
            "pass a folder of an AutoModelForCausalLM architecture."
        ) from None
    except OSError as error:
        raise CheckpointError(
            f"the weights in {folder} cannot be read ({first_line(error)}); save the model "
            "again with `model.save_pretrained(folder)`."
        ) from None


def build_causal_lm(folder: Path, *, trust_remote_code: bool = False) -> CausalLMParts:
    """The causal LM saved in `folder` (config, weights, tokenizer), in eval mode, read offline.
    Raises ConfigError / CheckpointError (one sentence, exit code 2) on a folder without a
    tokenizer, a tokenizer larger than the model's output, or remote code without the flag."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # stderr carries robench's own progress only
    folder = Path(folder)
    config = read_config(folder, trust_remote_code)
    tokenizer = read_tokenizer(folder, trust_remote_code, "a causal language model")
    check_tokenizer(tokenizer, None, f"the tokenizer in {folder}")  # before loading weights
    network = _load_model(folder, config, trust_remote_code)
    wrapped = CausalLMLogits(network).eval()
    check_tokenizer(tokenizer, wrapped.vocab_size, f"the tokenizer in {folder}")
    max_length = resolve_max_length(config, tokenizer)
    info = {
        "architecture": type(network).__name__,
        "model_type": getattr(config, "model_type", None),
        "dtype": str(next(network.parameters()).dtype).removeprefix("torch."),
        "tokenizer_class": type(tokenizer).__name__,
        "tokenizer_size": len(tokenizer),
        "tokenizer_sha256": tokenizer_sha256(folder),
        "max_length": max_length,
    }
    return CausalLMParts(model=wrapped, tokenizer=tokenizer, max_length=max_length, info=info)
