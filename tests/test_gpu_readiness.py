"""What makes robench GPU-ready, checked on a CPU: the device robench picks and records, the
float32 precision it evaluates in, seeds reaching every device's generators, and the
out-of-memory fallback halving the batch that ran out (exceptions injected)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from robench._core import seeding
from robench._core.distributed import resolve_device
from robench._core.errors import ConfigError, DeviceMemoryError
from robench._core.seeding import derive_seed
from robench.evaluation.environment import capture_environment, describe_device
from robench.evaluation.fp32_precision import float32_precision, precision_settings
from robench.evaluation.oom_fallback import SplitOnOutOfMemory, is_out_of_memory
from robench.evaluation.speed import SpeedOptions
from robench.perturbations.base import build_perturbation
from robench.perturbations.own_batch import OwnBatch
from robench.results.report.schema import device_type_note, precision_note
from tests.report_factory import make_report

CPU = torch.device("cpu")


def test_auto_picks_cuda_only_where_a_gpu_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == CPU
    with pytest.raises(ConfigError, match="no CUDA GPU is available"):
        resolve_device("cuda:0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(ConfigError, match=r"has 2 CUDA GPU\(s\), cuda:0 to cuda:1"):
        resolve_device("cuda:2")
    with pytest.raises(ConfigError, match="use auto, cpu, cuda or cuda:N"):
        resolve_device("gpu")


def test_the_seed_reaches_the_gpus_before_cuda_is_initialised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`robench train` seeds before the model is moved: the GPUs' generators must be seeded
    then too, not only once CUDA is in use."""
    seeded: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "manual_seed_all", seeded.append)
    seeding.seed_everything(1234)
    assert seeded == [1234]
    first = torch.rand(3)
    seeding.seed_everything(1234)
    assert torch.equal(torch.rand(3), first)  # and the CPU generator as before
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    seeding.seed_everything(5)
    assert seeded == [1234, 1234]  # no GPU: nothing to seed


def test_evaluation_runs_in_ieee_float32_and_restores_the_callers_setting() -> None:
    before = precision_settings()
    with float32_precision() as name:
        assert name == "fp32"
        assert all(value in ("ieee", False) for value in precision_settings().values())
    assert precision_settings() == before
    with float32_precision(tf32=True) as name:
        assert name == "tf32"
        assert all(value in ("tf32", True) for value in precision_settings().values())
    assert precision_settings() == before
    with pytest.raises(KeyError), float32_precision():
        raise KeyError("an evaluation that fails")
    assert precision_settings() == before


def test_the_report_names_the_device_and_the_precision() -> None:
    described = describe_device(CPU)
    assert described == "cpu" or described.startswith("cpu (")
    env = capture_environment(CPU, SpeedOptions(tf32=True).precision(CPU))
    assert env.precision == "fp32"  # TF32 is a CUDA mode: a CPU computes in float32
    assert SpeedOptions(tf32=True).precision(torch.device("cuda")) == "tf32"
    assert SpeedOptions(amp="bf16").precision(CPU) == "bf16 autocast, attacks fp32"
    assert SpeedOptions(amp="bf16", amp_attacks=True).precision(CPU) == "bf16 autocast"


def _with_environment(**fields: Any) -> Any:
    report = make_report()
    return report.model_copy(update={"environment": report.environment.model_copy(update=fields)})


def test_compare_and_gate_note_other_devices_and_precisions() -> None:
    cpu = _with_environment(device="cpu (Intel Xeon)", precision="fp32")
    gpu = _with_environment(device="cuda:0 (NVIDIA H100 80GB HBM3)", precision="fp32")
    tf32 = _with_environment(device="cuda:1 (NVIDIA H100 80GB HBM3)", precision="tf32")
    note = device_type_note([cpu, gpu], ["a", "b"])
    assert note is not None and "a cpu, b cuda" in note
    assert device_type_note([gpu, tf32], ["a", "b"]) is None  # same type, other index
    assert precision_note([gpu, tf32], ["a", "b"]) is not None
    assert precision_note([cpu, gpu], ["a", "b"]) is None
    # A report from before robench recorded the precision reads as float32.
    assert precision_note([make_report(), cpu], ["old", "new"]) is None


@pytest.mark.parametrize(
    "message",
    [
        "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
        "cuDNN error: CUDNN_STATUS_NOT_ENOUGH_WORKSPACE",
        "CUDA error: out of memory",
    ],
)
def test_cublas_and_cudnn_allocation_failures_are_out_of_memory(message: str) -> None:
    assert is_out_of_memory(RuntimeError(message))
    assert not is_out_of_memory(RuntimeError("CUDNN_STATUS_BAD_PARAM"))


class _OutOfMemoryAbove(nn.Module):
    """`model`, but a forward pass of more than `limit` rows runs out of GPU memory
    (simulated on CPU with cuBLAS's words)."""

    def __init__(self, model: nn.Module, limit: int) -> None:
        super().__init__()
        self.model, self.limit, self.widest = model, limit, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > self.limit:
            raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasSgemm")
        self.widest = max(self.widest, x.shape[0])
        return self.model(x)


def _smoothing_case() -> tuple[nn.Module, torch.Tensor, torch.Tensor, list[int]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3)).eval()
    images = torch.rand(4, 1, 4, 4)
    seeds = [derive_seed(9, "rs", i) for i in range(len(images))]
    return model, images, torch.zeros(4, dtype=torch.long), seeds


def test_out_of_memory_in_smoothing_halves_its_batch_not_batch_size() -> None:
    model, images, labels, seeds = _smoothing_case()
    params = {"sigma": 0.25, "n0": 20, "n": 100, "batch": 64}
    whole: Any = build_perturbation("randomized-smoothing", params)
    expected = whole.perturb_samples(model, images, labels, seeds)[1]

    smoothing: Any = build_perturbation("randomized-smoothing", params)
    small = _OutOfMemoryAbove(model, 20)
    splitter = SplitOnOutOfMemory(4)

    def work(start: int, stop: int, size: int) -> dict[str, list[Any]]:
        rows = slice(start, stop)
        return smoothing.perturb_samples(small, images[rows], labels[rows], seeds[rows])[1]

    found = splitter.run(4, work, "rs batch 0", smoothing.own_batch)
    assert found == expected  # noise does not depend on the parts: the same certificates
    assert splitter.size == 4  # --batch-size untouched
    assert smoothing.own_batch.size == 16 and small.widest == 16  # 64 -> 32 -> 16
    assert splitter.note is not None
    assert "the suite's `batch` of randomized-smoothing" in splitter.note


def test_out_of_memory_at_one_row_names_the_perturbations_knob() -> None:
    model, images, labels, seeds = _smoothing_case()
    smoothing: Any = build_perturbation("randomized-smoothing", {"sigma": 0.25, "n0": 4, "n": 8})
    never = _OutOfMemoryAbove(model, 0)
    splitter = SplitOnOutOfMemory(4)
    with pytest.raises(DeviceMemoryError, match=r"`batch` of randomized-smoothing cannot go"):
        splitter.run(
            4,
            lambda a, b, size: smoothing.perturb_samples(never, images, labels, seeds)[1],
            "rs batch 0",
            smoothing.own_batch,
        )


def test_out_of_memory_outside_a_perturbations_own_calls_shrinks_batch_size() -> None:
    own = OwnBatch("randomized-smoothing", "batch", 8)
    calls: list[int] = []

    def work(start: int, stop: int, size: int) -> dict[str, list[Any]]:
        calls.append(stop - start)
        if stop - start > 2:  # the scoring of the batch, outside own.calls()
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")
        with own.calls():
            return {"i": list(range(start, stop))}

    splitter = SplitOnOutOfMemory(4)
    assert splitter.run(4, work, "clean batch 0", own) == {"i": [0, 1, 2, 3]}
    assert splitter.size == 2 and own.size == 8
    assert calls == [4, 2, 2]
