"""What can be wrong with a transformers model folder, said in one sentence that names the
file, before (or instead of) transformers' own exceptions and reports: weights that are not
safetensors, a config field or tokenizer.json transformers refuses, weights that do not fit
the config.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from logging.handlers import BufferingHandler
from pathlib import Path
from typing import Any

from robench._core.errors import CheckpointError, ConfigError, first_line


def check_safetensors(paths: list[Path]) -> None:
    """Refuse a `.safetensors` file whose header is missing, cut off or does not cover it
    (safetensors checks the header against the file's size; no tensor is read)."""
    from safetensors import SafetensorError, safe_open

    for path in paths:
        if not path.name.endswith(".safetensors"):
            continue
        try:
            with safe_open(str(path), framework="pt", device="cpu"):
                pass
        except (SafetensorError, OSError, ValueError) as exc:
            raise CheckpointError(
                f"cannot read safetensors file {path} ({first_line(exc)}); the file is empty, "
                "truncated or not safetensors: copy or download it again."
            ) from None


def config_errors() -> tuple[type[Exception], ...]:
    """What transformers raises for a config.json whose fields its config class refuses."""
    try:
        from huggingface_hub.errors import StrictDataclassError
    except ImportError:  # older huggingface_hub: no strict configs, TypeError at the latest
        return (TypeError,)
    return (StrictDataclassError, TypeError)


def read_config(folder: Path, trust_remote_code: bool) -> Any:
    """transformers' config of `folder`, offline; a field it refuses, code of its own without
    --trust-remote-code or an unreadable file is one sentence naming config.json."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(
            str(folder), local_files_only=True, trust_remote_code=trust_remote_code
        )
    except config_errors() as exc:
        # The validation's cause when it has one: "Field 'num_channels' expected int, ...".
        raise ConfigError(
            f"{folder / 'config.json'} has a field transformers refuses "
            f"({first_line(exc.__cause__ or exc)}); fix that field or save the model again "
            "with save_pretrained."
        ) from None
    except (OSError, ValueError, KeyError) as exc:
        if "trust_remote_code" in str(exc) and not trust_remote_code:
            raise ConfigError(
                f"the model in {folder} needs its own Python code (its config names custom "
                "classes); robench runs it only when asked: add --trust-remote-code if you "
                "trust the folder's code."
            ) from None
        raise ConfigError(
            f"transformers cannot read {folder / 'config.json'} ({first_line(exc)}); save the "
            "model again with save_pretrained."
        ) from None


def check_tokenizer_json(folder: Path) -> None:
    """Refuse a tokenizer.json that `tokenizers` cannot read as a tokenizer."""
    path = folder / "tokenizer.json"
    if not path.is_file():
        return
    from tokenizers import Tokenizer

    try:
        Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises plain Exception for every bad file
        raise ConfigError(
            f"{path} is not a tokenizer `tokenizers` can read ({first_line(exc)}); save the "
            "tokenizer again with `tokenizer.save_pretrained(folder)`."
        ) from None


@contextlib.contextmanager
def load_report_held(folder: Path) -> Iterator[None]:
    """Hold transformers' warnings while a model loads: shown as usual when it loads, turned
    into one sentence when its weights do not fit its config (transformers' load report, one
    line per tensor, then "look at the above report", is dropped)."""
    from transformers.utils import logging as hf_logging

    collect = BufferingHandler(capacity=sys.maxsize)  # keeps every record, never flushes
    collect.setLevel(logging.WARNING)
    hf_logging.disable_default_handler()
    hf_logging.add_handler(collect)
    try:
        yield
    except RuntimeError as exc:
        mismatched = sum(r.getMessage().count("| MISMATCH |") for r in collect.buffer)
        if not mismatched and "size mismatch" not in str(exc):
            raise
        shown = f"{mismatched} tensors" if mismatched else "tensors"
        raise CheckpointError(
            f"the weights in {folder} do not fit its config.json ({shown} have other shapes "
            "than the config makes); the weights and config.json must come from the same "
            "save_pretrained."
        ) from None
    finally:
        hf_logging.remove_handler(collect)
        hf_logging.enable_default_handler()
    for record in collect.buffer:  # loaded: the warnings as transformers shows them
        logging.getLogger(record.name).handle(record)
