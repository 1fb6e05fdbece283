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
    )
