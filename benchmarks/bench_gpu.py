"""GPU throughput of robench's clean pass, PGD-20 and AutoAttack: DeiT-tiny vs Elliptical.

Run from the repository root on a machine with a CUDA GPU:

    .venv/bin/python benchmarks/bench_gpu.py             # writes reports/benchmarks.md
    .venv/bin/python benchmarks/bench_gpu.py --rounds 3 --output /tmp/gpu.md
    .venv/bin/python benchmarks/bench_gpu.py --device cpu --quick --output /tmp/gpu_quick.md

Without a CUDA device, `--device cuda` (the default) measures nothing: it writes the section
with every row "not measured" and the reason, and exits 0. A CPU run (`--device cpu`, meant
only to prove the code works) must name its `--output`, so CPU numbers never land in the report
as GPU numbers.

Models: timm's `deit_tiny_patch16_224` and robench's `deit_tiny_elliptical_patch16_224`, built
by `robench.models.loading.load_model` (random weights, ImageNet normalisation inside the
model, so both take [0, 1] pixels), the baseline's random weights copied into the elliptical
model. Inputs: seeded uniform random 224x224 RGB images, already on the device. Each image is
labelled with the model's own clean prediction, so clean accuracy is 100% and every attack
starts on every point.

Workloads, each run the way `robench eval` runs a batch: robench's perturbation
(`build_perturbation(kind, params).perturb(model, images, labels, seed)`) and then the scoring
forward pass on its output under `torch.inference_mode()`:

- `clean`: robench's identity perturbation (a copy) and the forward pass.
- `pgd-20`: L-inf eps 4/255 (the paper's DeiT setting), 20 steps of 1/255, random start
  (torchattacks' PGD through robench).
- `autoattack`: AutoAttack standard, L-inf eps 4/255 (pyautoattack through robench).

Time: float32, eval mode, `torch.cuda.synchronize()` before and after each timed block, one
untimed warm-up batch of each workload per model (`--warmup`), then `--rounds` rounds with
the models interleaved (baseline, elliptical | elliptical, baseline | ...). Reported per
workload and model: the median over rounds of images per second, and the median over rounds
of the per-round ratio elliptical / baseline. The section between the `bench_gpu` markers of
the output file is replaced, or appended when absent.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch
from report_sections import cpu_name, load_average, write_section

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports" / "benchmarks.md"
START, END = "<!-- bench_gpu -->", "<!-- /bench_gpu -->"
BASELINE, ELLIPTICAL = "deit_tiny_patch16_224", "deit_tiny_elliptical_patch16_224"
MODELS = (BASELINE, ELLIPTICAL)
EPS = 4 / 255  # L-inf budget of the paper's DeiT experiments
NOT_MEASURED = "not measured"
GPU_COMMAND = "python benchmarks/bench_gpu.py"


@dataclass(frozen=True)
class Workload:
    kind: str  # a registered perturbation kind (robench.perturbations)
    params: dict[str, Any]  # its parameters, as a suite would give them
    images: int  # images per round on a GPU
    quick_images: int  # images per round with --quick
    what: str  # how the section describes it


WORKLOADS: dict[str, Workload] = {
    "clean": Workload("clean", {}, 2048, 4, "identity perturbation + forward pass"),
    "pgd-20": Workload(
        "pgd",
        {"eps": EPS, "steps": 20, "step_size": 1 / 255, "random_start": True, "norm": "linf"},
        512,
        4,
        "L-inf 4/255, 20 steps of 1/255, random start",
    ),
    "autoattack": Workload(
        "autoattack",
        {"eps": EPS, "version": "standard", "norm": "linf"},
        256,
        2,
        "standard (APGD-CE, APGD-T, FAB-T, Square), L-inf 4/255",
    ),
}


@dataclass
class Measurement:
    images: int
    images_per_s: list[float] = field(default_factory=list)  # one per round
    correct: int = 0  # images still predicted as labelled after the perturbation (last round)
    # CUDA only: the most memory a round allocated above what was allocated before it.
    peak_gib: float | None = None


def _package(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "absent"


def _rate(images_per_s: float) -> str:
    """One decimal from 10 images/s up, three significant digits below (slow CPU runs)."""
    return f"{images_per_s:.1f}" if images_per_s >= 10 else f"{images_per_s:.3g}"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def build_models(device: torch.device) -> dict[str, torch.nn.Module]:
    """Both models through robench's loader, the baseline's random weights in both."""
    from robench.models.loading import load_model

    torch.manual_seed(0)
    models = {name: load_model(name, device=device).model for name in MODELS}
    # NormalizedModel(network): copy the network's weights, keep each model's own layers.
    state = models[BASELINE].model.state_dict()  # type: ignore[union-attr]
    models[ELLIPTICAL].model.load_state_dict(state, strict=True)  # type: ignore[union-attr]
    return models


def make_batches(
    n: int, batch_size: int, model: torch.nn.Module, device: torch.device
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`n` seeded random images on `device`, in batches, labelled with `model`'s own clean
    prediction (so every image starts correctly classified)."""
    generator = torch.Generator().manual_seed(n)
    images = torch.rand(n, 3, 224, 224, generator=generator).to(device)  # (n, 3, 224, 224)
    batches = []
    for chunk in images.split(batch_size):
        with torch.inference_mode():
            labels = model(chunk).argmax(-1)  # (B,)
        batches.append((chunk, labels.clone()))
    return batches


def run_batches(
    model: torch.nn.Module,
    perturbation: Any,
    batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
    device: torch.device,
) -> tuple[float, int, float | None]:
    """Seconds for perturbing and scoring every batch (synchronised), how many images are
    still predicted as labelled, and (CUDA) the peak GiB allocated above the start."""
    _sync(device)
    resident = 0
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        resident = torch.cuda.memory_allocated(device)
    start = time.perf_counter()
    correct = torch.zeros((), dtype=torch.long, device=device)
    for seed, (images, labels) in enumerate(batches):
        perturbed = perturbation.perturb(model, images, labels, seed)
        with torch.inference_mode():
            correct += (model(perturbed).argmax(-1) == labels).sum()
    _sync(device)
    seconds = time.perf_counter() - start
    if device.type != "cuda":
        return seconds, int(correct), None
    return seconds, int(correct), (torch.cuda.max_memory_allocated(device) - resident) / 2**30


def measure(
    name: str,
    n_images: int,
    batch_size: int,
    rounds: int,
    warmup: int,
    models: dict[str, torch.nn.Module],
    device: torch.device,
) -> dict[str, Measurement]:
    """One workload on both models: `warmup` untimed batches each, then interleaved rounds."""
    from robench.perturbations.base import build_perturbation

    spec = WORKLOADS[name]
    perturbation = build_perturbation(spec.kind, spec.params)
    batches = {m: make_batches(n_images, batch_size, models[m], device) for m in MODELS}
    results = {m: Measurement(images=n_images) for m in MODELS}
    for m in MODELS:
        run_batches(models[m], perturbation, batches[m][:warmup], device)
    for r in range(rounds):
        for m in MODELS if r % 2 == 0 else MODELS[::-1]:
            seconds, correct, peak = run_batches(models[m], perturbation, batches[m], device)
            result = results[m]
            result.images_per_s.append(n_images / seconds)
            result.correct = correct
            if peak is not None:
                result.peak_gib = max(peak, result.peak_gib or 0.0)
    return results


def _header(device: str, started: datetime.datetime) -> list[str]:
    return [
        START,
        "## GPU throughput: clean, PGD-20 and AutoAttack, DeiT-tiny vs Elliptical "
        "(benchmarks/bench_gpu.py)",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC",
        f"- device: {device}; torch {torch.__version__}, timm {_package('timm')}, "
        f"torchattacks {_package('torchattacks')}, pyautoattack {_package('pyautoattack')}",
        f"- models: `{BASELINE}` (timm, baseline) vs `{ELLIPTICAL}` (robench), the same random "
        "weights, 224x224 inputs; float32, eval mode",
    ]


def _workload_lines() -> list[str]:
    return [f"- `{name}`: {spec.what}" for name, spec in WORKLOADS.items()]


TABLE_HEAD = [
    "| workload | model | images | images/s (median) | ratio elliptical / baseline "
    "| still correct after | peak GPU memory GiB above resident |",
    "|---|---|---:|---:|---:|---:|---:|",
]


def not_measured_section(reason: str, started: datetime.datetime) -> str:
    """The section when no GPU could be used: every (workload, model) row "not measured"."""
    lines = [*_header("no CUDA device", started), *_workload_lines(), ""]
    lines += [f"**Not measured.** {reason}", "", *TABLE_HEAD]
    for name in WORKLOADS:
        for model in MODELS:
            cells = [name, f"`{model}`", *[NOT_MEASURED] * 5]
            lines.append("| " + " | ".join(cells) + " |")
    lines.append(END)
    return "\n".join(lines)


def measured_section(
    args: argparse.Namespace,
    device: torch.device,
    results: dict[str, dict[str, Measurement]],
    started: datetime.datetime,
    loads: tuple[str, str],
) -> str:
    if device.type == "cuda":
        name = f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
        tf32 = (
            f"TF32 matmul {torch.backends.cuda.matmul.allow_tf32}, "
            f"TF32 cuDNN {torch.backends.cudnn.allow_tf32}"
        )
    else:
        name, tf32 = f"CPU {cpu_name()}, {torch.get_num_threads()} threads", "no TF32"
    command = f"{GPU_COMMAND} --device {args.device}{' --quick' if args.quick else ''}"
    lines = [
        *_header(name, started),
        f"- load average (1, 5, 15 min) before: {loads[0]}; after: {loads[1]}",
        f"- command: `{command}`; batch {args.batch_size}, {args.rounds} round(s) in "
        f"ABBA order after {args.warmup} untimed warm-up batch(es) per model; {tf32}",
        "- work per batch: robench's perturbation (`build_perturbation(...).perturb`) and the "
        "scoring forward pass under `torch.inference_mode()`, as `robench eval` does; images "
        "already on the device, labelled with each model's own clean prediction (random "
        "weights: clean accuracy 100% by construction, every attack starts on every point)",
        *_workload_lines(),
        "",
        *TABLE_HEAD,
    ]
    for workload, per_model in results.items():
        base = per_model[BASELINE].images_per_s
        for model, m in per_model.items():
            ratios = [e / b for e, b in zip(m.images_per_s, base, strict=True)]
            peak = "n/a" if m.peak_gib is None else f"{m.peak_gib:.2f}"
            lines.append(
                f"| {workload} | `{model}` | {m.images} | "
                f"{_rate(statistics.median(m.images_per_s))} | {statistics.median(ratios):.3f} | "
                f"{m.correct} / {m.images} | {peak} |"
            )
    lines += [
        "",
        "AutoAttack runs each of its attacks only on the points that survived the previous "
        "ones. On these random weights its first attack, APGD-CE (100 iterations), breaks "
        "about every point (on CPU, 8 images: APGD-CE alone and standard both left 0 of 8 "
        "correct, in the same time), so this row is mostly APGD-CE's throughput: a robust "
        "model, on which APGD-T, FAB-T and Square also run, costs far more per image. "
        '"Still correct after" counts the points that survived every attack. Peak GPU '
        "memory: the most a round allocated above what was already allocated before it.",
    ]
    if device.type != "cuda":
        lines.append("")
        lines.append("**CPU run: these numbers only show that the code runs; not GPU numbers.**")
    lines.append(END)
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=128,
        help="images per batch for every workload (default 128: DeiT-tiny with input "
        "gradients needs ~4 GiB at 128, and one size keeps the workloads comparable)",
    )
    parser.add_argument(
        "--images",
        type=int,
        help="images per round for every workload (default: "
        + ", ".join(f"{n} {w.images}" for n, w in WORKLOADS.items())
        + "; --quick: "
        + ", ".join(f"{n} {w.quick_images}" for n, w in WORKLOADS.items())
        + ")",
    )
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed batches per model first (default 1)"
    )
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a few images, batch 2, one round, no warm-up: proves every workload runs "
        "(e.g. on CPU), times nothing worth reading",
    )
    parser.add_argument(
        "--output",
        type=Path,
        help="file to write the section into (default for CUDA: "
        "reports/benchmarks.md; required for a CPU run)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.batch_size, args.rounds, args.warmup = 2, 1, 0
    if args.output is None:
        if not args.device.startswith("cuda"):
            parser.error("a CPU run must name --output: CPU numbers never go into the report")
        args.output = REPORT
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        reason = (
            "No CUDA device on this machine (`torch.cuda.is_available()` is False): the task "
            "that wrote this section was not lent a GPU, so no throughput was measured. To "
            f"measure, run `{GPU_COMMAND}` on a machine with a CUDA GPU."
        )
        section = not_measured_section(reason, started)
        print(section)
        write_section(args.output, section, START, END)
        return 0
    before = load_average()
    models = build_models(device)
    results = {}
    for name in args.workloads:
        spec = WORKLOADS[name]
        n = args.images or (spec.quick_images if args.quick else spec.images)
        results[name] = measure(name, n, args.batch_size, args.rounds, args.warmup, models, device)
        print(name, {m: r.images_per_s for m, r in results[name].items()}, flush=True)
    section = measured_section(args, device, results, started, (before, load_average()))
    print(section)
    write_section(args.output, section, START, END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
