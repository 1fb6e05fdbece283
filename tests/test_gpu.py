"""robench on a CUDA GPU against robench on the CPU (`make test-gpu`; skipped without a GPU).

- Per-sample predictions agree between CPU and CUDA for clean, FGSM, deterministic PGD,
  AutoAttack's APGD-CE and corruptions, on a shipped nano model and a 224x224 DeiT-tiny
  (timm, seeded random weights), up to one sample in 64 that floating-point order may flip
  (the differences are printed and recorded as test properties).
- Randomized smoothing's certified accuracy on CUDA lies inside the CPU run's 95%
  Clopper-Pearson band (CPU and GPU draw different noise: they agree in distribution only).
- `robench.evaluate` leaves a CUDA model as it found it: device, modes, parameters, hooks and
  the CUDA random state.
- --amp bf16, --channels-last, --compile and --tf32 run and are recorded; the report names
  the GPU; --seed reaches the CUDA generator before CUDA is initialised.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from scipy.stats import beta
from torch import nn
from typer.testing import CliRunner

import robench
from robench.cli import app
from robench.results.report.schema import Report

pytestmark = pytest.mark.gpu

NANO = "vit_nano_fmnist"
AGREEMENT_SUITE: list[dict[str, Any]] = [
    {"kind": "clean"},
    {"kind": "fgsm", "name": "fgsm", "eps": "2/255"},
    {
        "kind": "pgd",
        "name": "pgd-10",
        "eps": "2/255",
        "steps": 10,
        "step_size": "0.5/255",
        "random_start": False,
    },
    {"kind": "autoattack", "name": "apgd-ce", "eps": "2/255", "attacks": ["apgd-ce"]},
    {"kind": "corruption", "corruptions": ["gaussian_noise", "contrast"], "severities": [3]},
]
ALLOWED_SHARE = 1 / 64  # samples that floating-point order may flip


def _predictions(report: Report) -> dict[str, list[Any]]:
    (samples,) = report.samples.values()
    return {name: columns["prediction"] for name, columns in samples.values.items()}


def _disagreements(cpu: Report, cuda: Report) -> dict[str, int]:
    ours, theirs = _predictions(cpu), _predictions(cuda)
    assert ours.keys() == theirs.keys()
    return {
        name: sum(a != b for a, b in zip(ours[name], theirs[name], strict=True)) for name in ours
    }


def _check_agreement(
    run: Callable[[str], Report], record_property: Callable[[str, object], None], label: str
) -> None:
    cpu, cuda = run("cpu"), run("cuda")
    assert cpu.environment.device.startswith("cpu")
    assert cuda.environment.device.startswith("cuda:0 (")
    assert cpu.environment.precision == cuda.environment.precision == "fp32"
    differing = _disagreements(cpu, cuda)
    record_property(f"{label}_differing_samples", json.dumps(differing))
    print(f"{label}: samples whose prediction differs CPU vs CUDA: {differing}")
    n = len(next(iter(_predictions(cpu).values())))
    allowed = max(1, math.floor(n * ALLOWED_SHARE))
    assert all(count <= allowed for count in differing.values()), differing


def test_a_nano_model_predicts_the_same_on_cpu_and_cuda(
    record_property: Callable[[str, object], None],
) -> None:
    def run(device: str) -> Report:
        return robench.evaluate(
            NANO, AGREEMENT_SUITE, limit=128, batch_size=64, seed=0, device=device, progress=False
        )

    _check_agreement(run, record_property, NANO)


def _deit_tiny() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """DeiT-tiny at 224x224 with seeded random weights, on 64 seeded images labelled with
    the model's second choice (so attacks have work to do)."""
    import timm

    torch.manual_seed(0)
    model = timm.create_model("deit_tiny_patch16_224", pretrained=False, num_classes=10).eval()
    images = torch.rand(64, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        labels = model(images).topk(2, dim=-1).indices[:, 1]
    return model, images, labels


def test_deit_tiny_predicts_the_same_on_cpu_and_cuda(
    record_property: Callable[[str, object], None],
) -> None:
    model, images, labels = _deit_tiny()
    preprocessing = {"mean": (0.5, 0.5, 0.5), "std": (0.5, 0.5, 0.5), "size": (3, 224, 224)}

    def run(device: str) -> Report:
        return robench.evaluate(
            model.to(device),
            AGREEMENT_SUITE,
            (images, labels),
            preprocessing=preprocessing,
            batch_size=32,
            seed=0,
            device=device,
            progress=False,
        )

    _check_agreement(run, record_property, "deit_tiny_224")


def _clopper_pearson(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else float(beta.ppf(tail, successes, n - successes + 1))
    high = 1.0 if successes == n else float(beta.ppf(1 - tail, successes + 1, n - successes))
    return low, high


def test_smoothing_on_cuda_certifies_within_the_cpu_runs_band() -> None:
    suite = [{"kind": "randomized-smoothing", "name": "rs", "sigma": 0.25, "n0": 50, "n": 2000}]

    def run(device: str) -> tuple[float, int]:
        report = robench.evaluate(
            NANO, suite, limit=64, batch_size=64, seed=0, device=device, progress=False
        )
        (result,) = report.results
        return result.metrics["certified_accuracy@0.25"].value, result.n_samples

    cpu, n = run("cpu")
    cuda, _ = run("cuda")
    low, high = _clopper_pearson(round(cpu * n), n)
    assert low <= cuda <= high, (cpu, cuda, (low, high))


def test_the_api_leaves_a_cuda_model_as_it_found_it() -> None:
    model, images, labels = _deit_tiny()
    model = model.cuda().train()
    model.head.weight.requires_grad_(False)
    calls: list[int] = []
    handle = model.register_forward_hook(lambda *args: calls.append(1))
    params = {name: p.detach().clone() for name, p in model.named_parameters()}
    torch.cuda.manual_seed(123)
    rng = torch.cuda.get_rng_state()
    robench.evaluate(
        model,
        [{"kind": "clean"}, {"kind": "fgsm", "name": "fgsm", "eps": "1/255"}],
        (images[:8], labels[:8]),
        preprocessing={"mean": (0.5,) * 3, "std": (0.5,) * 3, "size": (3, 224, 224)},
        batch_size=8,
        progress=False,
    )
    assert all(p.device.type == "cuda" for p in model.parameters())
    assert model.training and all(m.training for m in model.modules())
    assert not model.head.weight.requires_grad
    assert all(torch.equal(p, params[name]) for name, p in model.named_parameters())
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(torch.cuda.get_rng_state(), rng)
    calls.clear()
    with torch.no_grad():
        model(images[:1].cuda())
    assert calls == [1]  # the caller's hook is still there, and only it
    handle.remove()


@pytest.mark.parametrize(
    ("flags", "precision"),
    [
        (["--amp", "bf16", "--channels-last"], "bf16 autocast, attacks fp32"),
        (["--compile"], "fp32"),
        (["--tf32"], "tf32"),
    ],
)
def test_speed_modes_run_on_cuda_and_are_recorded(
    tmp_path: Path, flags: list[str], precision: str
) -> None:
    out = tmp_path / "r.json"
    args = ["eval", NANO, "-s", "smoke", "--limit", "64", "--device", "cuda", "-o", str(out)]
    result = CliRunner().invoke(app, [*args, *flags])
    assert result.exit_code == 0, result.output
    report = Report.model_validate_json(out.read_text())
    assert report.environment.device.startswith("cuda:0 (")
    assert report.environment.precision == precision
    assert report.speed is not None
    assert report.speed.amp == ("bf16" if "--amp" in flags else None)
    assert report.speed.channels_last is ("--channels-last" in flags)
    assert report.speed.compile is ("--compile" in flags)


def test_auto_is_cuda_here_and_the_report_names_the_gpu(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["eval", NANO, "-s", "smoke", "--limit", "64", "-o", str(out)])
    assert result.exit_code == 0, result.output
    device = Report.model_validate_json(out.read_text()).environment.device
    assert device == f"cuda:0 ({torch.cuda.get_device_name(0)})"


_DRAW = (
    "import sys, torch\n"
    "from robench._core.seeding import seed_everything\n"
    "seed_everything(int(sys.argv[1]))  # before CUDA is initialised, as robench train does\n"
    "print(torch.randn(4, device='cuda').tolist())\n"
)


def _draw(seed: int) -> list[float]:
    found = subprocess.run(
        [sys.executable, "-c", _DRAW, str(seed)], capture_output=True, text=True, check=True
    )
    return json.loads(found.stdout)


def test_the_seed_reaches_the_cuda_generator_before_cuda_starts() -> None:
    assert _draw(7) == _draw(7)
    assert _draw(7) != _draw(8)
