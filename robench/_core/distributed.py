"""torch.distributed set-up for runs under `torchrun` (gloo on CPU, nccl on GPU).

Outside torchrun (no WORLD_SIZE in the environment) everything is a no-op on one process.
"""

from __future__ import annotations

import os
from collections.abc import Sized
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils.data import DistributedSampler

from robench._core.errors import ConfigError


def resolve_device(name: str) -> torch.device:
    """`cpu`, `cuda` or `cuda:N`, refusing CUDA on a machine without a GPU."""
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"--device {name!r} is not a device; use cpu, cuda or cuda:N.") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda was given but no CUDA GPU is available; use --device cpu.")
    return device


@dataclass
class DistributedContext:
    rank: int
    world_size: int
    device: torch.device

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_env(cls, device_name: str) -> DistributedContext:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", "0"))
        device = resolve_device(device_name)
        if world > 1:
            backend = "nccl" if device.type == "cuda" else "gloo"
            if not torch.distributed.is_initialized():
                torch.distributed.init_process_group(backend=backend)
            if device.type == "cuda":
                device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
                torch.cuda.set_device(device)
        return cls(rank=rank, world_size=world, device=device)

    def sampler(self, items: Sized, seed: int) -> DistributedSampler | None:
        if not self.enabled:
            return None
        positions: Any = range(len(items))  # the sampler only needs len()
        return DistributedSampler(
            positions, num_replicas=self.world_size, rank=self.rank, seed=seed
        )

    def wrap(self, model: nn.Module) -> nn.Module:
        if not self.enabled:
            return model
        ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def barrier(self) -> None:
        if self.enabled:
            torch.distributed.barrier()

    def close(self) -> None:
        if self.enabled and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
