"""Efficiency: throughput, peak memory, FLOPs and parameters of one forward pass.

Reproduces Tables 11-12 of Elliptical Attention (NeurIPS 2024). What each number measures and
how (units, CUDA vs CPU memory, what the FLOP counter counts): docs/diagnostics.md, `efficiency`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode

from robench.diagnostics.base import (
    Diagnostic,
    DiagnosticOutput,
    check_inputs,
    inference,
    model_device,
)
from robench.diagnostics.params import EfficiencyParams

__all__ = ["Efficiency", "EfficiencyParams", "count_flops", "forward_peak_memory"]

logger = logging.getLogger(__name__)

_MIB = 2**20


def _sync(device: torch.device) -> None:
    if device.type == "cuda":  # kernels run asynchronously: wait for them before the clock
        torch.cuda.synchronize(device)


def _cuda_memory(model: nn.Module, batch: Tensor) -> dict[str, float | None]:
    device = batch.device
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    model(batch)
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    return {
        "peak_memory_mb": (peak - before) / _MIB,
        "cuda_max_memory_allocated_mb": peak / _MIB,
    }


@contextlib.contextmanager
def _native_stderr_to_debug_log() -> Iterator[None]:
    """Send what native code writes to file descriptor 2 to the debug log instead.

    torch's profiler (kineto) prints `profiler_start` trace lines and, on a CUDA build without
    a GPU, a spurious `gpuGetDeviceCount failed` error straight to the descriptor; Python's
    `sys.stderr` redirection cannot catch either.
    """
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace").strip()
            if text:
                logger.debug("torch profiler output:\n%s", text)


def _cpu_memory(model: nn.Module, batch: Tensor) -> dict[str, float | None]:
    from torch.profiler import ProfilerActivity, profile

    with (
        _native_stderr_to_debug_log(),
        profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
    ):
        model(batch)
    try:
        events = prof.profiler.kineto_results.events()  # type: ignore[union-attr]
    except AttributeError:  # a torch without kineto results: say so rather than guess
        logger.warning("this torch's profiler exposes no memory events; peak memory not measured")
        return {"peak_memory_mb": None}
    # Allocations are positive, frees negative; their running sum is the live tensor memory.
    deltas = sorted((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]")
    live = peak = 0
    for _, nbytes in deltas:
        live += nbytes
        peak = max(peak, live)
    return {"peak_memory_mb": peak / _MIB}


def _unmeasured(model: nn.Module, batch: Tensor) -> dict[str, float | None]:
    logger.warning("peak memory is not measured on %s devices", batch.device.type)
    return {"peak_memory_mb": None}


_MEMORY_METERS: dict[str, Callable[[nn.Module, Tensor], dict[str, float | None]]] = {
    "cpu": _cpu_memory,
    "cuda": _cuda_memory,
}


def forward_peak_memory(model: nn.Module, batch: Tensor) -> dict[str, float | None]:
    """Peak memory of one forward pass of `batch` (see the module docstring), in MiB."""
    return _MEMORY_METERS.get(batch.device.type, _unmeasured)(model, batch)


def _sdpa_flops(
    query_shape: torch.Size,
    key_shape: torch.Size,
    value_shape: torch.Size,
    *args: Any,
    **kwargs: Any,
) -> int:
    """Q K^T and A V of scaled dot-product attention: 2 FLOPs per multiply-add each."""
    *batch, length, dim = query_shape
    source, value_dim = key_shape[-2], value_shape[-1]
    heads = math.prod(batch)
    return 2 * heads * length * source * dim + 2 * heads * length * source * value_dim


def _missing_attention_formulas() -> dict[Any, Any]:
    """Formulas for the attention kernels this torch's counter does not know (CPU flash)."""
    from torch.utils.flop_counter import flop_registry

    op = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if op is None or op in flop_registry:  # the counter keys formulas by overload packet
        return {}
    return {op: _sdpa_flops}


def count_flops(model: nn.Module, batch: Tensor) -> int:
    """FLOPs of one forward pass of `batch`, as `FlopCounterMode` counts them."""
    with FlopCounterMode(display=False, custom_mapping=_missing_attention_formulas()) as counter:
        model(batch)
    return int(counter.get_total_flops())


def _time_forward(model: nn.Module, batch: Tensor, warmup: int, iterations: int) -> float:
    for _ in range(warmup):
        model(batch)
    _sync(batch.device)
    start = time.perf_counter()
    for _ in range(iterations):
        model(batch)
    _sync(batch.device)
    return time.perf_counter() - start


class Efficiency(Diagnostic):
    """Throughput, peak memory, FLOPs per sample and parameter count (Tables 11-12) of any
    model, a language model's sample being one window of T tokens; writes no files. The
    values: docs/diagnostics.md, `efficiency`."""

    Params = EfficiencyParams
    params: EfficiencyParams

    def measure(
        self, model: nn.Module, images: Tensor, out_dir: Path | None, title: str | None
    ) -> DiagnosticOutput:
        images = check_inputs(images)
        p = self.params
        device = model_device(model, images.device)
        tile = torch.arange(p.batch_size, device=images.device) % images.shape[0]
        batch = images[tile].to(device)  # (batch_size, C, H, W) or token ids (batch_size, T)
        with inference(model):
            seconds = _time_forward(model, batch, p.warmup, p.iterations)
            memory = forward_peak_memory(model, batch)
            flops = count_flops(model, batch[:1])
        values: dict[str, Any] = {
            "throughput_samples_per_s": p.batch_size * p.iterations / seconds,
            "latency_ms_per_batch": 1000 * seconds / p.iterations,
            **memory,
            "gflops_per_sample": flops / 1e9,
            "parameters": sum(param.numel() for param in model.parameters()),
        }
        if device.type == "cpu":  # CPU throughput depends on it (and on other load)
            values["cpu_threads"] = torch.get_num_threads()
        logger.info(
            "efficiency: %.1f samples/s, %.4f GFLOPs/sample, %d parameters",
            values["throughput_samples_per_s"],
            values["gflops_per_sample"],
            values["parameters"],
        )
        return DiagnosticOutput(values=values)
