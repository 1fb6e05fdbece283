"""Deterministic seeds: one run seed, derived per perturbation and batch.

Seeding each batch from (run seed, perturbation, batch number) rather than from a running
RNG makes a resumed run draw exactly the same randomness as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any


def derive_seed(seed: int, *parts: object) -> int:
    """A 31-bit seed from `seed` and any labels, stable across processes and platforms."""
    text = ":".join([str(seed), *map(str, parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") & 0x7FFFFFFF


def seed_everything(seed: int) -> None:
    """Seed Python, numpy, the CPU generator and every accelerator's generators.

    The CPU generator directly: torch.manual_seed costs ~70 us a call (a dynamo guard and
    bookkeeping for every backend), paid twice per batch. The GPUs' generators are seeded
    whenever the machine has GPUs, not only once CUDA is initialised: torch queues the seed
    of a GPU not yet in use and applies it when CUDA starts, so a seed set before the model
    is moved (`robench train`, a model built before `.to(device)`) still reaches the GPU.
    CPU and GPU generators are different algorithms: the same seed gives different draws.
    """
    import numpy as np  # here, so that derive_seed alone stays light (text perturbations)
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.default_generator.manual_seed(seed)
    for seed_all in _accelerator_seeders(torch):
        seed_all(seed)


def _accelerator_seeders(torch: Any) -> list[Callable[[int], None]]:
    """The seed-every-device function of each accelerator (CUDA, XPU, MPS) this machine has."""
    seeders = [
        module.manual_seed_all
        for module in (getattr(torch, "cuda", None), getattr(torch, "xpu", None))
        if module is not None and module.is_available()
    ]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():  # one generator: its manual_seed
        seeders.append(torch.mps.manual_seed)
    return seeders
