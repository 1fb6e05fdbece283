"""What a report records about the machine and software that produced it."""

from __future__ import annotations

import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version

import torch

from robench.results.report import Environment


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def git_sha() -> str | None:
    """HEAD of the repository the command runs in, if any (the user's project, usually)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and len(sha) == 40 else None


def describe_device(device: torch.device) -> str:
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    return device.type


SEEDING = (
    "one run seed; every batch of every result is seeded from (run seed, result name, batch "
    "number), each corrupted image from (run seed, corruption, sample index), each Word Swap "
    "line from (run seed, line number): the same command gives the same report"
)
GPU_NOTE = (
    "on CUDA, cuDNN autotuning and atomic-add kernels (e.g. in backward passes of attention "
    "and index operations) are not bit-reproducible unless deterministic algorithms are "
    "enabled; torchattacks and AutoAttack do not enable them, so attacked predictions may "
    "differ in rare borderline samples between GPU runs (CPU runs are reproducible)"
)


def determinism(device: torch.device) -> dict[str, object]:
    """torch's determinism settings and how robench seeds, for the report."""
    settings: dict[str, object] = {
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "seeding": SEEDING,
    }
    if device.type == "cuda":
        settings["gpu_note"] = GPU_NOTE
    return settings


def capture_environment(device: torch.device) -> Environment:
    return Environment(
        python=platform.python_version(),
        platform=platform.platform(),
        torch=torch.__version__,
        timm=package_version("timm") or "unknown",
        torchattacks=package_version("torchattacks"),
        pyautoattack=package_version("pyautoattack"),
        device=describe_device(device),
        num_threads=torch.get_num_threads(),
        git_sha=git_sha(),
        determinism=determinism(device),
    )
