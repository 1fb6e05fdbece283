"""What a transfer attack costs beside the white-box one, side by side.

Run from the repository root (after `make install`):

    .venv/bin/python benchmarks/bench_transfer.py   # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_transfer.py --limit 64 --rounds 3 --output /tmp/t.md

Sides, each a whole `robench.evaluate` of vit_nano_elliptical_fmnist on `--limit` seeded
Fashion-MNIST test images in batches of `--batch`, with one PGD-10 entry at 4/255:
- white-box: the attack runs on the evaluated model;
- transfer from the baseline: the same entry with `surrogate="vit_nano_fmnist"` (loaded and
  checked by the run: input size, classes, randomness), the evaluated model scoring its
  images. The baseline has no M to compute, so its attack steps are cheaper than the
  Elliptical model's own: this is what a user of the `transfer` suite pays;
- transfer from the same architecture: the surrogate is vit_nano_elliptical_patch4_28 with the
  baseline's weights (an Elliptical network of the evaluated model's cost), so the difference
  to white-box is transfer's own overhead: loading and checking the surrogate, once per run.
Each round runs the sides in an order rotated by one; reported are the medians and the median
of per-round ratios (transfer / white-box) of wall time and of the process's CPU time. The
section between the `bench_transfer` markers of the output file is replaced; the rest is kept.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time
from pathlib import Path

import torch
from report_sections import cpu_name, load_average, write_section

import robench

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench_transfer -->", "<!-- /bench_transfer -->"
ENTRY = {"kind": "pgd", "name": "pgd-10", "eps": "4/255", "steps": 10, "step_size": "1/255"}


BASELINE_WEIGHTS = ROOT / "models" / "vit_nano_fmnist.safetensors"
SIDES: dict[str, dict[str, object]] = {
    "white-box": {},
    "transfer from the baseline": {"surrogate": "vit_nano_fmnist"},
    "transfer, same architecture": {
        "surrogate": "vit_nano_elliptical_patch4_28",
        "surrogate_checkpoint": BASELINE_WEIGHTS,
    },
}


def _side(options: dict[str, object], limit: int, batch: int) -> float:
    """One evaluation; returns its top-1 (so every side is seen to do the work)."""
    report = robench.evaluate(
        "vit_nano_elliptical_fmnist",
        [ENTRY],
        limit=limit,
        batch_size=batch,
        progress=False,
        **options,  # type: ignore[arg-type]
    )
    return report.results[0].metrics["top1"].value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's own)"
    )
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    top1 = {name: _side(options, args.limit, args.batch) for name, options in SIDES.items()}
    load_before = load_average()
    wall: dict[str, list[float]] = {name: [] for name in SIDES}
    cpu: dict[str, list[float]] = {name: [] for name in SIDES}
    names = list(SIDES)
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start, process = time.perf_counter(), time.process_time()
            _side(SIDES[name], args.limit, args.batch)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - process)
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    rows = []
    for name in names:
        cells = [f"{100 * top1[name]:.2f}"]
        for clock, what in ((wall, "wall"), (cpu, "CPU")):
            ratios = [t / w for w, t in zip(clock["white-box"], clock[name], strict=True)]
            ratio = statistics.median(ratios)
            cells.append(
                f"{statistics.median(clock[name]):.2f} | {ratio:.3f} "
                f"({min(ratios):.3f} to {max(ratios):.3f})"
            )
            print(f"{name} / white-box, {what} time: median ratio {ratio:.3f}")
        rows.append(f"| {name} | {' | '.join(cells)} |")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = "\n".join(
        [
            START,
            "## Transfer attacks: cost beside white-box PGD (benchmarks/bench_transfer.py)",
            "",
            f"{now}; {cpu_name()}, {torch.get_num_threads()} torch threads; "
            f"`robench.evaluate` of vit_nano_elliptical_fmnist with one PGD-10 entry at 4/255 "
            f"on {args.limit} Fashion-MNIST images in batches of {args.batch}; "
            f"{args.rounds} interleaved rounds; load average (1, 5, 15 min) {load_before} "
            f"before, {load_average()} after. Ratios: the side's time / white-box's, median "
            "of the rounds (range).",
            "",
            "| side | top-1 % | wall s | wall ratio | CPU s | CPU ratio |",
            "|---|---:|---:|---:|---:|---:|",
            *rows,
            "",
            "Transfer's own overhead is the same-architecture row: loading and checking the",
            "surrogate (a checkpoint read, forward passes on four images), once per run. From",
            "the baseline the attack steps run on a model without M, cheaper than the",
            "Elliptical model's own, so the whole run costs less than white-box.",
            END,
        ]
    )
    write_section(args.output, section, START, END)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
