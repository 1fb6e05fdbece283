"""Throughput of torchattacks attacks through robench's generic adapter against a bare
torchattacks loop, side by side in one run (issue 37, item 5).

Run from the repository root (after `make install`):

    .venv/bin/python benchmarks/bench_torchattacks_adapter.py   # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_torchattacks_adapter.py --rounds 9 --output /tmp/ta.md
    .venv/bin/python benchmarks/bench_torchattacks_adapter.py --device cuda --limit 1024 \
        --batch 256 --output /tmp/ta.md

Sides, on the shipped vit_nano_fmnist and the first `--limit` Fashion-MNIST test images in
batches of `--batch`, for CW (L2 minimal-norm, `--cw-steps` Adam steps), Square (L-inf 8/255,
`--square-queries` queries) and MI-FGSM (L-inf 8/255, 10 steps):
- bare: the torchattacks class built once per batch and called on it, after the calls that
  switch off its normalisation handling and training-mode switching, as a user's own loop
  does (torch seeded once per batch, so both sides draw the same numbers);
- robench: the `torchattacks.NAME` kind as the runner calls it, `perturb_with_columns` per
  batch: the schema's arguments, `isolated_attack` (eval mode, forked and seeded RNGs,
  captured prints, the model's parameters frozen and restored), numpy's RNG seeded, and
  after the attack the projection onto the ball (Square, MI-FGSM) or the per-sample
  `min_norm` column (CW: two more forward passes).
Each round runs every side in an order rotated by one, so a slow drift of a shared machine
hits both alike; reported are the medians and the median of per-round throughput ratios
(robench / bare = bare time / robench time), of wall time and of the process's CPU time.
Goal: ratio >= `GOAL` (0.97). The section between the `bench_torchattacks_adapter` markers
of the output file is replaced; the rest is kept.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torchattacks
from report_sections import cpu_name, load_average, write_section

from robench.data import open_dataset
from robench.models.loading import load_model
from robench.perturbations.base import build_perturbation

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench_torchattacks_adapter -->", "<!-- /bench_torchattacks_adapter -->"
GOAL = 0.97
Batches = list[tuple[torch.Tensor, torch.Tensor]]


def _bare(model: torch.nn.Module, build: Callable[[], Any], batches: Batches) -> Callable[[], None]:
    def run() -> None:
        for seed, (images, labels) in enumerate(batches):
            torch.manual_seed(seed)
            attack = build()
            attack._set_normalization_applied(None)
            attack.set_model_training_mode(model_training=False)
            attack.set_device(images.device)
            attack(images, labels)

    return run


def _robench(
    model: torch.nn.Module, kind: str, params: dict[str, Any], batches: Batches
) -> Callable[[], None]:
    perturbation = build_perturbation(kind, params)

    def run() -> None:
        for seed, (images, labels) in enumerate(batches):
            perturbation.perturb_with_columns(model, images, labels, seed)

    return run


def _pairs(
    model: torch.nn.Module, batches: Batches, cw_steps: int, queries: int
) -> dict[str, tuple[Callable[[], None], Callable[[], None]]]:
    eps = 8 / 255
    return {
        f"CW-{cw_steps} (L2, minimal-norm)": (
            _bare(model, lambda: torchattacks.CW(model, c=1.0, steps=cw_steps, lr=0.01), batches),
            _robench(model, "torchattacks.CW", {"c": 1.0, "steps": cw_steps}, batches),
        ),
        f"Square-{queries} (Linf 8/255)": (
            _bare(
                model,
                lambda: torchattacks.Square(model, eps=eps, n_queries=queries, seed=0),
                batches,
            ),
            _robench(
                model, "torchattacks.Square", {"eps": eps, "n_queries": queries, "seed": 0}, batches
            ),
        ),
        "MI-FGSM-10 (Linf 8/255)": (
            _bare(model, lambda: torchattacks.MIFGSM(model, eps=eps, steps=10), batches),
            _robench(model, "torchattacks.MIFGSM", {"eps": eps, "steps": 10}, batches),
        ),
    }


def _batches(limit: int, batch: int, device: torch.device) -> tuple[torch.nn.Module, Batches]:
    loaded = load_model("vit_nano_fmnist")
    assert loaded.preprocessing is not None
    data = open_dataset("fashion-mnist", preprocessing=loaded.preprocessing)
    items = [data[i] for i in range(limit)]
    images = torch.stack([x for x, _ in items]).to(device)
    labels = torch.tensor([int(y) for _, y in items], device=device)
    batches = [(images[i : i + batch], labels[i : i + batch]) for i in range(0, limit, batch)]
    return loaded.model.to(device).eval(), batches


def _timed(
    pairs: dict[str, tuple[Callable[[], None], Callable[[], None]]], rounds: int, device: Any
) -> tuple[dict[tuple[str, int], list[float]], dict[tuple[str, int], list[float]]]:
    wall: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], list[float]] = {}
    sides = [(name, side) for name in pairs for side in (0, 1)]
    for bare, ours in pairs.values():  # warm-up: imports, allocator, kernels
        bare()
        ours()
    for r in range(rounds):
        for name, side in sides[r % len(sides) :] + sides[: r % len(sides)]:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            start, process = time.perf_counter(), time.process_time()
            pairs[name][side]()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            wall.setdefault((name, side), []).append(time.perf_counter() - start)
            cpu.setdefault((name, side), []).append(time.process_time() - process)
        print(f"round {r + 1}/{rounds} done", flush=True)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=128)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cw-steps", type=int, default=50)
    parser.add_argument("--square-queries", type=int, default=200)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    model, batches = _batches(args.limit, args.batch, device)
    pairs = _pairs(model, batches, args.cw_steps, args.square_queries)
    load_before = load_average()
    wall, cpu = _timed(pairs, args.rounds, device)
    rows = []
    for name in pairs:
        cells = []
        for clock, what in ((wall, "wall"), (cpu, "CPU")):
            bare, ours = clock[name, 0], clock[name, 1]
            ratios = [b / o for b, o in zip(bare, ours, strict=True)]
            ratio = statistics.median(ratios)
            cells.append(
                f"{statistics.median(bare):.3f} | {statistics.median(ours):.3f} | {ratio:.3f} "
                f"({min(ratios):.3f} to {max(ratios):.3f})"
            )
            print(f"{name}: robench/bare throughput, {what} time, median ratio {ratio:.3f}")
        rows.append(f"| {name} | {' | '.join(cells)} |")
    hardware = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = "\n".join(
        [
            START,
            "## torchattacks through robench's adapter against a bare torchattacks loop "
            "(benchmarks/bench_torchattacks_adapter.py)",
            "",
            f"{now}; {hardware}, {torch.get_num_threads()} torch threads, torchattacks "
            f"{torchattacks.__version__}; {args.limit} Fashion-MNIST images in batches of "
            f"{args.batch}, vit_nano_fmnist, {args.rounds} interleaved rounds; load average "
            f"(1, 5, 15 min) {load_before} before, {load_average()} after.",
            "",
            f"Throughput ratio = bare seconds / robench seconds; goal: >= {GOAL}.",
            "",
            "| attack | wall s, bare | wall s, robench | wall ratio (range) | CPU s, bare | "
            "CPU s, robench | CPU ratio (range) |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            END,
        ]
    )
    write_section(args.output, section, START, END)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
