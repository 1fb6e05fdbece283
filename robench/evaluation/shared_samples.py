"""Perturbed samples kept for the next evaluation in the same process (`robench demo`).

A sample perturbation's output is a function of the clean input and its seed alone (run seed,
`seed_key`, index; `SamplePerturbation`), so two models evaluated on the same data under the
same corruptions get the same corrupted inputs. Inside `sharing_perturbed_samples()` the
first evaluation keeps each one, keyed by that seed and a digest of the clean input, and the
next evaluation reads it back instead of corrupting the image again. Outside it nothing is
kept. DataLoader workers (other processes) compute their own, as without sharing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

Key = tuple[str, int, bytes]  # (seed_key, the sample's seed, blake2b of the clean input)
_memo: dict[Key, torch.Tensor] | None = None


@contextmanager
def sharing_perturbed_samples() -> Iterator[None]:
    """Share perturbed samples between the evaluations run inside; forget them after."""
    global _memo
    outer, _memo = _memo, {} if _memo is None else _memo
    try:
        yield
    finally:
        _memo = outer


def perturbed_sample(
    seed_key: str, seed: int, item: torch.Tensor, compute: Callable[[], torch.Tensor]
) -> torch.Tensor:
    """`compute()`, or what it returned for an equal input, key and seed inside the current
    `sharing_perturbed_samples()`."""
    if _memo is None or not isinstance(item, torch.Tensor):
        return compute()
    # Bytes and shape: equal digests of differently shaped inputs must not collide.
    digest = hashlib.blake2b(item.contiguous().numpy().tobytes(), digest_size=16)
    digest.update(repr((tuple(item.shape), item.dtype)).encode())
    key = (seed_key, seed, digest.digest())
    if key not in _memo:
        _memo[key] = compute()
    return _memo[key]
