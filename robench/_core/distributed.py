"""torch.distributed set-up for runs under `torchrun` (gloo on CPU, nccl on GPU); outside
torchrun (no WORLD_SIZE in the environment) everything is a no-op on one process. On CPU each
process takes its share of the node's cores unless the user chose a thread count
(`cpu_threads`; why: docs/distributed.md, "Threads on CPU").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sized
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn
from torch.utils.data import DistributedSampler

from robench._core.errors import ConfigError

T = TypeVar("T")

logger = logging.getLogger(__name__)


def resolve_device(name: str) -> torch.device:
    """`auto` (CUDA when a GPU is available, else the CPU), `cpu`, `cuda` or `cuda:N` (a GPU
    this machine has)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(
            f"--device {name!r} is not a device; use auto, cpu, cuda or cuda:N."
        ) from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"--device {name} was given but no CUDA GPU is available; use --device cpu (or auto)."
        )
    if device.type == "cuda" and device.index is not None:
        count = torch.cuda.device_count()
        if device.index >= count:
            raise ConfigError(
                f"--device {name}: this machine has {count} CUDA GPU(s), cuda:0 to "
                f"cuda:{count - 1}; pick one of them."
            )
    return device


def on_cuda_device(name: str) -> AbstractContextManager[object]:
    """`cuda:N` as CUDA's current device inside the block, so library code that allocates on
    "the" GPU (`device="cuda"`) uses the run's; a no-op for any other device."""
    try:
        device = torch.device(name)
    except RuntimeError:
        return nullcontext()
    if device.type != "cuda" or device.index is None or not torch.cuda.is_available():
        return nullcontext()
    if device.index >= torch.cuda.device_count():
        return nullcontext()
    return torch.cuda.device(device.index)


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
            else:
                share_cpu()
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

    def gather(self, value: T) -> list[T]:
        """`value` of every rank, in rank order (a list of one when not distributed)."""
        if not self.enabled:
            return [value]
        values: list[Any] = [None] * self.world_size
        torch.distributed.all_gather_object(values, value)
        return values

    def close(self) -> None:
        if self.enabled and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def cpu_threads(
    environ: Mapping[str, str],
    launcher_environ: Mapping[str, str] | None,
    cores: int,
    current: int,
) -> int | None:
    """Intra-op threads for one of the node's LOCAL_WORLD_SIZE processes on `cores` CPUs, or
    None to keep `current` (the user chose it). `launcher_environ` (the parent's, None when
    unreadable) tells torchrun's `OMP_NUM_THREADS=1` default from the user's own."""
    share = max(1, cores // _local_processes(environ))
    if "MKL_NUM_THREADS" in environ:
        return None
    omp = environ.get("OMP_NUM_THREADS")
    if omp is None:  # no launcher default either: take the share, never more than torch's
        return min(current, share)
    if _torchrun_default(environ, launcher_environ) and current == 1:
        return share  # current == 1: not changed by the caller (torch.set_num_threads)
    return None


def _local_processes(environ: Mapping[str, str]) -> int:
    """How many processes of this run share this node (torchrun's LOCAL_WORLD_SIZE)."""
    return max(1, int(environ.get("LOCAL_WORLD_SIZE", environ.get("WORLD_SIZE", "1"))))


def _torchrun_default(environ: Mapping[str, str], launcher: Mapping[str, str] | None) -> bool:
    """Whether OMP_NUM_THREADS=1 was set by torchrun (absent from its own environment)."""
    return (
        "TORCHELASTIC_RUN_ID" in environ
        and environ.get("OMP_NUM_THREADS") == "1"
        and launcher is not None
        and "OMP_NUM_THREADS" not in launcher
    )


def _launcher_environ() -> dict[str, str] | None:
    """The environment the parent process (torchrun's agent) started with, on Linux."""
    try:
        raw = Path(f"/proc/{os.getppid()}/environ").read_bytes()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def _cores() -> int:
    """CPUs this process may run on (a SLURM allocation or taskset narrows them)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def share_cpu() -> int:
    """Set torch's intra-op threads to this process's share of the node (`cpu_threads`),
    warn (once per node) when the user's choice oversubscribes it; return the count."""
    cores, current = _cores(), torch.get_num_threads()
    chosen = cpu_threads(os.environ, _launcher_environ(), cores, current)
    if chosen is not None and chosen != current:
        torch.set_num_threads(chosen)
        logger.debug("torch intra-op threads: %d -> %d (share of %d CPUs)", current, chosen, cores)
    threads = torch.get_num_threads()
    local = _local_processes(os.environ)
    user_choice = chosen is None
    if user_choice and threads * local > cores and os.environ.get("LOCAL_RANK", "0") == "0":
        logger.warning(
            "%d processes x %d threads oversubscribe the %d CPUs of this node (much slower); "
            "set OMP_NUM_THREADS=%d, or unset it and robench shares the cores.",
            local,
            threads,
            cores,
            max(1, cores // local),
        )
    return threads
