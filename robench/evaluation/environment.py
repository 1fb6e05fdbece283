"""What a report records about the machine and software that produced it."""

from __future__ import annotations

import functools
import os
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import torch

from robench.results.report.schema import Environment


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def git_sha(start: Path | None = None) -> str | None:
    """HEAD of the repository `start` (default: the working directory) is in, if any: the
    user's project, usually. Read from the repository's files, where `git rev-parse HEAD`
    cost 5 to 9 ms of every evaluation (benchmarks/bench_harness.py)."""
    try:  # a deleted working directory or an unreadable parent: no commit, not an error
        git_dir = _git_dir(Path.cwd() if start is None else start)
        if git_dir is None:
            return None
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):  # a detached HEAD holds the commit itself
            return _sha_or_none(head)
        ref = head.removeprefix("ref:").strip()
        common = _common_dir(git_dir)
        for base in dict.fromkeys((git_dir, common)):
            if (base / ref).is_file():
                return _sha_or_none((base / ref).read_text(encoding="utf-8").strip())
        packed = common / "packed-refs"  # refs moved there by `git gc` / `git pack-refs`
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return _sha_or_none(sha)
    except (OSError, UnicodeDecodeError):
        return None
    return None  # a branch without commits yet


def _git_dir(start: Path) -> Path | None:
    """The .git directory of the repository holding `start` ($GIT_DIR when set)."""
    if os.environ.get("GIT_DIR"):
        return Path(os.environ["GIT_DIR"])
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return dot_git
        if dot_git.is_file():  # a worktree or submodule: "gitdir: PATH"
            text = dot_git.read_text(encoding="utf-8").strip()
            if text.startswith("gitdir:"):
                return (folder / text.removeprefix("gitdir:").strip()).resolve()
            return None
    return None


def _common_dir(git_dir: Path) -> Path:
    """Where a worktree's shared refs live (the main repository's .git), else `git_dir`."""
    pointer = git_dir / "commondir"
    if not pointer.is_file():
        return git_dir
    return (git_dir / pointer.read_text(encoding="utf-8").strip()).resolve()


def _sha_or_none(text: str) -> str | None:
    """`text` when it is a commit id (SHA-1, or SHA-256 in repositories that use it)."""
    return text if len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text) else None


def describe_device(device: torch.device) -> str:
    """The device a run used, with its model: "cuda:0 (NVIDIA H100 80GB HBM3)",
    "cpu (AMD EPYC 7763 64-Core Processor)", or the bare type where the model is unknown."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    if device.type == "cpu":
        name = cpu_name()
        return f"cpu ({name})" if name else "cpu"
    return device.type


@functools.cache
def cpu_name() -> str | None:
    """The CPU's model name: Linux's /proc/cpuinfo, else what the platform reports."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:  # not Linux
        pass
    return platform.processor() or None


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


def capture_environment(device: torch.device, precision: str = "fp32") -> Environment:
    """The machine and software of a run on `device` in `precision` (SpeedOptions')."""
    return Environment(
        python=platform.python_version(),
        platform=platform.platform(),
        torch=torch.__version__,
        timm=package_version("timm") or "unknown",
        torchattacks=package_version("torchattacks"),
        pyautoattack=package_version("pyautoattack"),
        device=describe_device(device),
        precision=precision,
        num_threads=torch.get_num_threads(),
        git_sha=git_sha(),
        determinism=determinism(device),
    )
