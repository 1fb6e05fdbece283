"""Leave the caller's model as it was: `robench.evaluate` runs it in eval mode, on the run's
device, with robench's hooks, and sets the global seeds; a training loop that calls it every
N steps must carry on exactly where it stopped. `preserved(module)` records what it restores
on the way out, also when the run raises: docs/python-api.md, "The caller's model afterwards".
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

# The hook dictionaries of an nn.Module (`_forward_hooks`, `_state_dict_pre_hooks`, ...), as
# this torch version names them; those a module lacks are skipped.
_HOOK_DICTS = tuple(n for n, v in vars(nn.Module()).items() if "hook" in n and isinstance(v, dict))
_UNSET = object()


@dataclass
class _Snapshot:
    training: list[tuple[nn.Module, bool]] = field(default_factory=list)
    hooks: list[tuple[nn.Module, str, OrderedDict[Any, Any]]] = field(default_factory=list)
    params: list[tuple[nn.Parameter, torch.Tensor, bool, torch.Tensor | None]] = field(
        default_factory=list
    )
    # (module, name, the buffer tensor, a copy of its values)
    buffers: list[tuple[nn.Module, str, torch.Tensor | None, torch.Tensor | None]] = field(
        default_factory=list
    )
    pad_token_id: Any = _UNSET
    rng: tuple[Any, ...] = ()


def _take(module: nn.Module) -> _Snapshot:
    shot = _Snapshot()
    for sub in module.modules():
        shot.training.append((sub, sub.training))
        for name in _HOOK_DICTS:
            hooks = getattr(sub, name, None)
            if isinstance(hooks, dict):
                shot.hooks.append((sub, name, OrderedDict(hooks)))
        for name, buffer in sub._buffers.items():
            values = buffer.detach().clone() if buffer is not None else None
            shot.buffers.append((sub, name, buffer, values))
    for param in module.parameters():
        shot.params.append((param, param.data, param.requires_grad, param.grad))
        param.grad = None  # no attack gradient accumulates into the caller's
    config = getattr(module, "config", None)
    if config is not None and hasattr(config, "pad_token_id"):
        shot.pad_token_id = config.pad_token_id
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    shot.rng = (random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda)
    return shot


def _restore(module: nn.Module, shot: _Snapshot) -> None:
    for sub, name, hooks in shot.hooks:
        current = getattr(sub, name)
        current.clear()
        current.update(hooks)
    for sub, was_training in shot.training:
        sub.training = was_training
    for sub, name, buffer, values in shot.buffers:
        sub._buffers[name] = buffer
        if buffer is not None and values is not None:
            with torch.no_grad():
                buffer.copy_(values)
    for param, data, requires_grad, grad in shot.params:
        if param.data is not data:
            param.data = data
        param.requires_grad_(requires_grad)
        param.grad = grad
    if shot.pad_token_id is not _UNSET:
        module.config.pad_token_id = shot.pad_token_id  # type: ignore[union-attr]
    python, numpy_state, torch_state, cuda = shot.rng
    random.setstate(python)
    np.random.set_state(numpy_state)
    torch.set_rng_state(torch_state)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


@contextmanager
def preserved(module: nn.Module | None) -> Iterator[None]:
    """Run the body, then put `module` (if any) and the global RNGs back as they were."""
    shot = _take(module if module is not None else nn.Module())
    try:
        yield
    finally:
        _restore(module if module is not None else nn.Module(), shot)
