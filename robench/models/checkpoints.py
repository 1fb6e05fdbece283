"""Read checkpoints safely, load them into models with readable errors, write safetensors.

Safety: a pickle can run any code when it is loaded, so robench never unpickles a checkpoint
by default. `.safetensors` files hold tensors only; torch files (`.pth`, `.pt`, ...) are read
with `torch.load(weights_only=True)`, which accepts tensors, containers and primitive values
(plus `argparse.Namespace`, which timm and DeiT training scripts store as `args`). Anything
else needs `trust=True` (the CLI's `--trust-checkpoint`), meant for files from a trusted source.

Layouts: a flat dict of tensors, or one nested where timm and DeiT keep it (`_MAIN_KEYS`,
`_EMA_KEYS`), wrapper prefixes removed (`_WRAPPER_PREFIXES`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import pickle
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import nn

from robench._core.errors import CheckpointError
from robench._core.file_modes import give_default_mode
from robench.models.hashing import sha256_file as sha256_file

logger = logging.getLogger(__name__)


# Non-tensor classes a weights-only load may rebuild: plain records without behaviour.
_SAFE_GLOBALS: list[Any] = [argparse.Namespace]

# Where nested checkpoints keep their weights, in lookup order (plain, then EMA).
_MAIN_KEYS = ("state_dict", "model")
_EMA_KEYS = ("state_dict_ema", "model_ema")

# Key prefixes added by wrappers: DistributedDataParallel and torch.compile.
_WRAPPER_PREFIXES = ("module.", "_orig_mod.")

# Errors torch.load raises on a file that is not a readable torch checkpoint.
_TORCH_READ_ERRORS = (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError)


@dataclass
class Checkpoint:
    """Weights read from a checkpoint file, ready for `load_state_dict_into`."""

    # The file that was read.
    path: Path
    # Hex sha256 of the file (recorded in reports).
    sha256: str
    # Parameter and buffer tensors on the CPU, wrapper prefixes removed.
    state_dict: dict[str, torch.Tensor]
    # safetensors header metadata; empty for torch files.
    metadata: dict[str, str] = field(default_factory=dict)
    # Where the weights were found: "safetensors", "state_dict", "model", "state_dict_ema",
    # "model_ema", "flat" or "module" (a pickled nn.Module, trusted loads only).
    layout: str = "flat"


# How torch files start: a zip archive (torch.save since 1.6, TorchScript) or a pickle of
# protocol 2+ (the legacy format); anything else is not a torch checkpoint at all.
_TORCH_MAGIC = (b"PK\x03\x04", b"\x80")


def _check_not_junk(path: Path, torch_file: bool) -> None:
    """Refuse an empty file, a web page or other text saved under a checkpoint's name, before
    any reader (and any advice about --trust-checkpoint) sees it."""
    with path.open("rb") as fh:
        head = fh.read(256)
    if not head:
        raise CheckpointError(
            f"checkpoint {path} is empty (0 bytes); the download or export did not finish, "
            "fetch or save it again."
        )
    text = head.lstrip().lower()
    if text.startswith((b"<!doctype", b"<html", b"<?xml", b"<head", b"<body")):
        what = "an HTML or XML page (a failed download, an error or login page)"
    elif torch_file and not head.startswith(_TORCH_MAGIC):
        what = f"a file that starts with {head[:12]!r}, neither a zip archive nor a pickle"
    else:
        return
    raise CheckpointError(
        f"{path} is not a checkpoint: it is {what}; download the weights again from their "
        "source (check the URL, and that it serves the file itself)."
    )


def _read_safetensors(path: Path, trust: bool) -> tuple[Any, dict[str, str]]:
    try:
        with safe_open(str(path), framework="pt", device="cpu") as fh:
            metadata = dict(fh.metadata() or {})
            tensors = {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(
            f"cannot read safetensors file {path} ({exc}); the file is truncated or not "
            "safetensors, download or export it again."
        ) from None
    return tensors, metadata


def _read_torch(path: Path, trust: bool) -> tuple[Any, dict[str, str]]:
    if trust:
        logger.warning(
            "unpickling %s with --trust-checkpoint: this runs any code the file contains", path
        )
    # torch < 2.5 has no safe_globals; its weights-only loader then rejects Namespace too.
    allow = getattr(torch.serialization, "safe_globals", None)
    try:
        with allow(_SAFE_GLOBALS) if allow and not trust else contextlib.nullcontext():
            return torch.load(path, map_location="cpu", weights_only=not trust), {}
    except (ImportError, AttributeError) as exc:
        if not trust:
            raise
        raise CheckpointError(
            f"checkpoint {path} pickles an object whose class cannot be imported ({exc}); "
            "install or import the code that saved it, or re-save its state_dict."
        ) from None
    except pickle.UnpicklingError as exc:
        if trust or "weights only load failed" not in str(exc).lower():
            raise CheckpointError(
                f"cannot read torch checkpoint {path} ({exc}); the file is corrupt, download or "
                "export it again."
            ) from None
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        what = f" (such as {found.group(1)})" if found else ""
        raise CheckpointError(
            f"checkpoint {path} contains Python objects{what} that need unpickling, which can "
            "run arbitrary code, so robench refuses to load it by default; pass "
            "--trust-checkpoint only if you trust the source of the file, or re-save its "
            "state_dict as .safetensors."
        ) from None
    except _TORCH_READ_ERRORS as exc:
        raise CheckpointError(
            f"cannot read torch checkpoint {path} ({exc}); the file is truncated or not a torch "
            "checkpoint, download or export it again."
        ) from None


# File-name suffix -> reader; longer suffixes are matched first.
_READERS: dict[str, Callable[[Path, bool], tuple[Any, dict[str, str]]]] = {
    ".safetensors": _read_safetensors,
    **dict.fromkeys((".pth.tar", ".pth", ".pt", ".bin", ".ckpt"), _read_torch),
}


def _reader_for(path: Path) -> Callable[[Path, bool], tuple[Any, dict[str, str]]]:
    name = path.name.lower()
    for suffix in sorted(_READERS, key=len, reverse=True):
        if name.endswith(suffix):
            return _READERS[suffix]
    raise CheckpointError(
        f"checkpoint {path} has an unknown file type; expected one of "
        f"{', '.join(_READERS)}, rename the file or convert it."
    )


def _is_tensor_dict(obj: object) -> TypeGuard[Mapping[str, torch.Tensor]]:
    return (
        isinstance(obj, Mapping)
        and len(obj) > 0
        and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items())
    )


def _top_keys(obj: Mapping[Any, Any]) -> str:
    keys = [repr(k) for k in list(obj)[:8]]
    return ", ".join(keys) + (", ..." if len(obj) > 8 else "")


def _find_weights(obj: Any, path: Path, ema: bool) -> tuple[Mapping[str, torch.Tensor], str]:
    """The state dict inside a loaded checkpoint and the layout name."""
    if isinstance(obj, nn.Module):
        return obj.state_dict(), "module"
    if not isinstance(obj, Mapping):
        raise CheckpointError(
            f"checkpoint {path} holds a {type(obj).__name__}; expected a dict of tensors (a "
            "state_dict), save one with torch.save(model.state_dict(), path)."
        )
    if ema:
        for key in _EMA_KEYS:
            if key in obj and _is_tensor_dict(obj[key]):
                return obj[key], key
        raise CheckpointError(
            f"checkpoint {path} has no EMA weights (looked for {', '.join(_EMA_KEYS)}; its "
            f"top-level keys are {_top_keys(obj)}); drop --ema to load its plain weights."
        )
    for key in _MAIN_KEYS:
        value = obj.get(key)
        if isinstance(value, nn.Module):
            return value.state_dict(), key
        if _is_tensor_dict(value):
            return value, key
    if _is_tensor_dict(obj):
        return obj, "flat"
    if any(_is_tensor_dict(obj.get(key)) for key in _EMA_KEYS):
        raise CheckpointError(
            f"checkpoint {path} holds only EMA weights (keys {_top_keys(obj)}); pass --ema to "
            "load them."
        )
    raise CheckpointError(
        f"checkpoint {path} has no weights robench can find (top-level keys: {_top_keys(obj)}); "
        f"expected a flat dict of tensors or one under {', '.join(_MAIN_KEYS + _EMA_KEYS)}."
    )


def _strip_wrapper_prefixes(
    state_dict: Mapping[str, torch.Tensor], path: Path
) -> dict[str, torch.Tensor]:
    """Remove `module.` / `_orig_mod.` from key starts and `_orig_mod.` from key middles."""
    cleaned: dict[str, torch.Tensor] = {}
    for key, tensor in state_dict.items():
        new = key.replace("._orig_mod.", ".")
        while new.startswith(_WRAPPER_PREFIXES):
            new = new.split(".", 1)[1]
        if new in cleaned:
            raise CheckpointError(
                f"checkpoint {path} holds both {key!r} and another key that becomes {new!r} "
                "once wrapper prefixes are removed; save the weights of one model only."
            )
        cleaned[new] = tensor
    return cleaned


def read_checkpoint(path: str | Path, *, ema: bool = False, trust: bool = False) -> Checkpoint:
    """Read a checkpoint's weights without unpickling arbitrary objects unless `trust`."""
    path = Path(path)
    if not path.is_file():
        state = "is a directory" if path.is_dir() else "does not exist"
        raise CheckpointError(
            f"checkpoint {str(path)!r} {state}; pass the path of a checkpoint file."
        )
    reader = _reader_for(path)
    _check_not_junk(path, torch_file=reader is _read_torch)
    sha256 = sha256_file(path)
    obj, metadata = reader(path, trust)
    if reader is _read_safetensors:
        if ema:
            raise CheckpointError(
                f"--ema was given but safetensors file {path} holds a single set of weights; "
                "drop --ema, or export the EMA weights to their own file."
            )
        weights, layout = obj, "safetensors"
    else:
        weights, layout = _find_weights(obj, path, ema)
    state_dict = _strip_wrapper_prefixes(weights, path)
    logger.debug("read %s: %d tensors, layout %s", path, len(state_dict), layout)
    return Checkpoint(path, sha256, state_dict, metadata, layout)


def _shapes(state_dict: Mapping[str, torch.Tensor]) -> dict[str, tuple[int, ...]]:
    return {key: tuple(tensor.shape) for key, tensor in state_dict.items()}


def _head_keys(model: nn.Module) -> set[str]:
    """State-dict keys of the classifier head: timm's `get_classifier()`, else the last
    nn.Linear."""
    get_classifier = getattr(model, "get_classifier", None)
    head = get_classifier() if callable(get_classifier) else None
    if not isinstance(head, nn.Module):
        linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
        head = linears[-1] if linears else None
    if head is None:
        return set()
    names = {id(m): name for name, m in model.named_modules()}
    prefix = names.get(id(head), "")
    return {f"{prefix}.{key}" if prefix else key for key in head.state_dict()}


def _likely_cause(
    model: nn.Module,
    model_name: str,
    missing: list[str],
    unexpected: list[str],
    mismatched: dict[str, tuple[tuple[int, ...], tuple[int, ...]]],
    n_model: int,
) -> str:
    """One clause naming the most likely reason for a mismatch, with its fix."""
    heads = _head_keys(model)
    class_counts = {(ckpt[0], mine[0]) for ckpt, mine in mismatched.values() if ckpt and mine}
    head_only = bool(
        mismatched
        and not missing
        and not unexpected
        and set(mismatched) <= heads
        and len(class_counts) == 1
        and all(ckpt[1:] == mine[1:] for ckpt, mine in mismatched.values())
    )
    if head_only:
        ckpt_classes, model_classes = next(iter(class_counts))
        return (
            f"wrong number of classes: the checkpoint has {ckpt_classes} classes, the model "
            f"{model_classes}; pass --num-classes {ckpt_classes}"
        )
    prefix = _extra_prefix(missing, unexpected)
    if prefix:
        return (
            f"the checkpoint's keys carry an extra prefix {prefix!r} (a training-framework "
            "wrapper); re-save the state_dict without that prefix"
        )
    if len(missing) + len(mismatched) > n_model / 2:
        return (
            f"wrong model name? most of {model_name!r}'s weights are not in the checkpoint; "
            "check the model name and its options"
        )
    return f"the checkpoint was saved from a different variant of {model_name!r}"


def _extra_prefix(missing: list[str], unexpected: list[str]) -> str | None:
    """A prefix such as `model.` whose removal turns the unexpected keys into the missing."""
    if not missing or len(missing) != len(unexpected):
        return None
    first = unexpected[0]
    for end in (i + 1 for i, char in enumerate(first) if char == "."):
        prefix = first[:end]
        stripped = {key[end:] for key in unexpected if key.startswith(prefix)}
        if len(stripped) == len(unexpected) and stripped == set(missing):
            return prefix
    return None


def _listed(keys: list[str], limit: int = 5) -> str:
    more = f" (and {len(keys) - limit} more)" if len(keys) > limit else ""
    return ", ".join(keys[:limit]) + more


def load_state_dict_into(
    model: nn.Module, state_dict: Mapping[str, torch.Tensor], *, model_name: str
) -> None:
    """Strictly load `state_dict` into `model`; one readable CheckpointError on a mismatch."""
    model_shapes = _shapes(model.state_dict())
    ckpt_shapes = _shapes(state_dict)
    missing = [key for key in model_shapes if key not in ckpt_shapes]
    unexpected = [key for key in ckpt_shapes if key not in model_shapes]
    mismatched = {
        key: (ckpt_shapes[key], shape)
        for key, shape in model_shapes.items()
        if key in ckpt_shapes and ckpt_shapes[key] != shape
    }
    if missing or unexpected or mismatched:
        shapes = [
            f"{k}: checkpoint {list(c)} vs model {list(m)}" for k, (c, m) in mismatched.items()
        ]
        found = (
            ("missing keys", missing),
            ("unexpected keys", unexpected),
            ("shape mismatches", shapes),
        )
        parts = [f"{what} {_listed(keys)}" for what, keys in found if keys]
        cause = _likely_cause(model, model_name, missing, unexpected, mismatched, len(model_shapes))
        raise CheckpointError(
            f"checkpoint does not fit model {model_name!r} ({'; '.join(parts)}); likely cause: "
            f"{cause}."
        )
    try:
        model.load_state_dict(state_dict, strict=True)
    except RuntimeError as exc:
        raise CheckpointError(
            f"checkpoint does not fit model {model_name!r} ({exc}); check the model name and "
            "its options."
        ) from None


def save_safetensors(
    state_dict: Mapping[str, torch.Tensor], path: str | Path, metadata: dict[str, str]
) -> str:
    """Write `state_dict` to `path` atomically (temporary file, then os.replace); return the
    file's sha256. Tensors are copied to contiguous CPU memory, which also unties shared
    (tied) weights that safetensors refuses."""
    path = Path(path)
    bad = {k: type(v).__name__ for k, v in metadata.items() if not isinstance(v, str)}
    if bad:
        raise TypeError(f"safetensors metadata values must be str; got {bad}")
    tensors = {key: t.detach().to("cpu").contiguous().clone() for key, t in state_dict.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        save_file(tensors, str(tmp), metadata=dict(metadata))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
            give_default_mode(fh.fileno())  # safetensors creates the file 0600
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return sha256_file(path)
