"""What one `robench.evaluate` call costs inside a training loop, side by side with a bare loop.

Run from the repository root (after `make install`):

    .venv/bin/python benchmarks/bench_evaluate_overhead.py   # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_evaluate_overhead.py --rounds 9 --output /tmp/api.md

Sides, on a small CNN built in memory (the model a notebook would hold) and the first
`--limit` (256) Fashion-MNIST test images as tensors `(x, y)`:
- `robench.evaluate(model, suite="smoke", data=(x, y))`: clean, FGSM at 8/255 and PGD-5 at
  8/255 (step 2/255, random start), each scored, with intervals, per-sample records and the
  model's state restored afterwards; nothing written;
- a bare loop doing the same work with torchattacks directly: a clean forward, FGSM and
  PGD-5 with the same parameters, and a forward on each attacked batch to count correct
  predictions.
Throughput ratio = bare time / evaluate time (goal: at least `GOAL`, 0.95). Each round runs both
sides in an order rotated by one, so a slow drift of a shared machine hits both alike; reported
are medians and the median of per-round ratios, in wall and CPU time. The call's fixed cost is
`evaluate` with a clean-only suite on one batch of 8 images, beside the bare forward of the
same batch (imports excluded: both run after a warm-up call). The section between the
`bench_evaluate_overhead` markers of the output file is replaced; the rest is kept.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torchattacks
from report_sections import cpu_name, load_average, write_section
from torch import nn

import robench
from robench.data import BUILTIN_DATASETS
from robench.data.idx import read_idx

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench_evaluate_overhead -->", "<!-- /bench_evaluate_overhead -->"
GOAL = 0.95
EPS, STEP = 8 / 255, 2 / 255


def small_cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 10),
    )


def test_images(limit: int) -> tuple[torch.Tensor, torch.Tensor]:
    folder = BUILTIN_DATASETS["fashion-mnist"].path
    images = read_idx(folder / "t10k-images-idx3-ubyte.gz")[:limit]
    labels = read_idx(folder / "t10k-labels-idx1-ubyte.gz")[:limit]
    return torch.from_numpy(images).float().div(255).unsqueeze(1), torch.from_numpy(labels).long()


def bare_loop(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int) -> list[int]:
    """Clean, FGSM and PGD-5 correct counts, with torchattacks and no robench."""
    was_training = model.training
    model.eval()
    fgsm = torchattacks.FGSM(model, eps=EPS)
    pgd = torchattacks.PGD(model, eps=EPS, alpha=STEP, steps=5, random_start=True)
    correct = [0, 0, 0]
    for start in range(0, len(x), batch):
        images, labels = x[start : start + batch], y[start : start + batch]
        with torch.no_grad():
            correct[0] += int((model(images).argmax(1) == labels).sum())
        for k, attack in ((1, fgsm), (2, pgd)):
            adversarial = attack(images, labels)
            with torch.no_grad():
                correct[k] += int((model(adversarial).argmax(1) == labels).sum())
    model.train(was_training)
    return correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    model = small_cnn().train()  # as a training loop holds it
    x, y = test_images(args.limit)

    def robench_side() -> None:
        robench.evaluate(model, suite="smoke", data=(x, y), batch_size=args.batch, progress=False)

    def bare_side() -> None:
        bare_loop(model, x, y, args.batch)

    sides: dict[str, Callable[[], None]] = {"bare": bare_side, "robench": robench_side}
    for run in sides.values():  # warm-up: imports, first-call allocations
        run()
    # Both sides do the same work: clean and FGSM (deterministic) must count the same correct
    # predictions; PGD's random start is seeded differently, so only its order is compared.
    report = robench.evaluate(model, suite="smoke", data=(x, y), batch_size=args.batch)
    top1 = report.to_pandas().query("metric == 'top1'").set_index("perturbation")["value"]
    bare = bare_loop(model, x, y, args.batch)
    print(f"correct of {args.limit}: robench {[round(v * args.limit) for v in top1]}, bare {bare}")
    assert round(top1["clean"] * args.limit) == bare[0], "clean accuracy differs"
    assert round(top1["fgsm"] * args.limit) == bare[1], "FGSM accuracy differs"
    load_before = load_average()
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for r in range(args.rounds):
        for name in names[r % 2 :] + names[: r % 2]:
            start, cpu_start = time.perf_counter(), time.process_time()
            sides[name]()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - cpu_start)
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    fixed_x, fixed_y = x[:8], y[:8]
    clean_only = {"name": "clean-only", "version": 1, "perturbations": [{"kind": "clean"}]}
    fixed, forward = [], []
    for _ in range(args.rounds):
        start = time.perf_counter()
        robench.evaluate(model, suite=clean_only, data=(fixed_x, fixed_y), progress=False)
        fixed.append(time.perf_counter() - start)
        start = time.perf_counter()
        with torch.no_grad():
            model.eval()(fixed_x).argmax(1)
        model.train()
        forward.append(time.perf_counter() - start)
    rows = []
    for clock, what in ((wall, "wall"), (cpu, "CPU")):
        ratios = [b / r for b, r in zip(clock["bare"], clock["robench"], strict=True)]
        ratio = statistics.median(ratios)
        print(f"{what}: throughput ratio (bare / evaluate) {ratio:.3f}")
        rows.append(
            f"| {what} | {statistics.median(clock['bare']):.3f} | "
            f"{statistics.median(clock['robench']):.3f} | {ratio:.3f} "
            f"({min(ratios):.3f} to {max(ratios):.3f}) |"
        )
    fixed_cost = statistics.median(fixed) - statistics.median(forward)
    print(f"fixed cost of one call: {1000 * fixed_cost:.0f} ms")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = "\n".join(
        [
            START,
            "## `robench.evaluate` inside a training loop (benchmarks/bench_evaluate_overhead.py)",
            "",
            f"{now}; {cpu_name()}, {torch.get_num_threads()} torch threads; a small CNN built "
            f"in memory, {args.limit} Fashion-MNIST test images as tensors in batches of "
            f"{args.batch}; smoke suite (clean, FGSM 8/255, PGD-5 8/255) against a bare "
            f"torchattacks loop doing the same attacks and scoring; {args.rounds} interleaved "
            f"rounds; load average (1, 5, 15 min) {load_before} before, {load_average()} after.",
            "",
            f"Goal: throughput ratio (bare time / evaluate time) >= {GOAL}.",
            "",
            "| clock | bare loop s | evaluate s | throughput ratio (range) |",
            "|---|---:|---:|---:|",
            *rows,
            "",
            f"Fixed cost of one call (clean-only suite, 8 images, minus the bare forward of the "
            f"same batch; median of {args.rounds}): {1000 * fixed_cost:.0f} ms "
            f"({1000 * statistics.median(fixed):.0f} ms for the call, "
            f"{1000 * statistics.median(forward):.1f} ms for the forward).",
            END,
        ]
    )
    write_section(args.output, section, START, END)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
