"""What recording first-success iterations and minimal norms costs an attack, side by side.

Run from the repository root (after `make install`):

    .venv/bin/python benchmarks/bench_attack_records.py   # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_attack_records.py --rounds 9 --output /tmp/records.md
    .venv/bin/python benchmarks/bench_attack_records.py --limit 32 --rounds 12 --fmn-steps 50 \
        --threads 1 --output /tmp/records.md

Sides, on the shipped vit_nano_fmnist and the first `--limit` Fashion-MNIST test images in
batches of `--batch`:
- PGD-20 at 4/255 through robench's adapter without records (`PGD.perturb`) and with them
  (`PGD.perturb_with_columns`: the `FirstWrong` wrapper, an argmax and a `where` per step);
- FMN (L-inf, `--fmn-steps`, 100) as the kind runs it (`MinimalNorm.perturb_with_columns`:
  first success per step, the columns as lists) and the algorithm alone without them (`fmn(...,
  record_first=False)`, tensors out): the norms are FMN's own output (it keeps the smallest
  adversarial), so the difference is what the records add, plus the kind's seeding and
  final projection.
Each round runs every pair in an order rotated by one, so a slow drift of a shared machine
hits both sides alike; reported are the medians and the median of per-round ratios
(with / without), of wall time and of the process's CPU time (all threads; on a shared
machine the CPU time is what other work disturbs least). Goal: at most `GOAL` (1.02). The
section between the `bench_attack_records` markers of the output file is replaced; the rest
is kept.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from report_sections import cpu_name, load_average, write_section

from robench.data import open_dataset
from robench.models.loading import load_model
from robench.perturbations.adversarial.fmn import fmn
from robench.perturbations.adversarial.params import MinimalNormParams
from robench.perturbations.base import build_perturbation

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench_attack_records -->", "<!-- /bench_attack_records -->"
GOAL = 1.02


def _pairs(
    model: torch.nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]], fmn_steps: int
) -> dict:
    pgd = build_perturbation("pgd", {"eps": "4/255", "steps": 20})
    fmn_kind = build_perturbation(
        "minimal-norm", {"eps": "8/255", "norm": "linf", "method": "fmn", "steps": fmn_steps}
    )
    params = fmn_kind.params
    assert isinstance(params, MinimalNormParams)

    def over(run: Callable[[torch.Tensor, torch.Tensor], object]) -> Callable[[], None]:
        def timed() -> None:
            for images, labels in batches:
                run(images, labels)

        return timed

    def bare_fmn(images: torch.Tensor, labels: torch.Tensor) -> object:
        with torch.enable_grad():
            return fmn(
                model,
                images,
                labels,
                norm="linf",
                steps=params.steps,
                step_size=params.resolved_step_size,
                gamma=params.gamma,
                record_first=False,
            )

    return {
        "PGD-20, 4/255": (
            over(lambda x, y: pgd.perturb(model, x, y, 0)),
            over(lambda x, y: pgd.perturb_with_columns(model, x, y, 0)),
        ),
        f"FMN-{fmn_steps}, L-inf": (
            over(bare_fmn),
            over(lambda x, y: fmn_kind.perturb_with_columns(model, x, y, 0)),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--fmn-steps", type=int, default=100)
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's own)"
    )
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    loaded = load_model("vit_nano_fmnist")
    assert loaded.preprocessing is not None
    data = open_dataset("fashion-mnist", preprocessing=loaded.preprocessing)
    items = [data[i] for i in range(args.limit)]
    images = torch.stack([x for x, _ in items])
    labels = torch.tensor([int(y) for _, y in items])
    batches = [
        (images[i : i + args.batch], labels[i : i + args.batch])
        for i in range(0, args.limit, args.batch)
    ]
    model = loaded.model.eval()
    pairs = _pairs(model, batches, args.fmn_steps)
    load_before = load_average()
    times: dict[tuple[str, int], list[float]] = {}
    cpu_times: dict[tuple[str, int], list[float]] = {}
    sides = [(name, side) for name in pairs for side in (0, 1)]
    for without, with_records in pairs.values():  # warm-up
        without()
        with_records()
    for r in range(args.rounds):
        order = sides[r % len(sides) :] + sides[: r % len(sides)]
        for name, side in order:
            start, cpu = time.perf_counter(), time.process_time()
            pairs[name][side]()
            times.setdefault((name, side), []).append(time.perf_counter() - start)
            cpu_times.setdefault((name, side), []).append(time.process_time() - cpu)
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    rows = []
    for name in pairs:
        cells = []
        for clock, what in ((times, "wall"), (cpu_times, "CPU")):
            base, rec = clock[name, 0], clock[name, 1]
            ratios = [b / a for a, b in zip(base, rec, strict=True)]
            ratio = statistics.median(ratios)
            cells.append(
                f"{statistics.median(base):.3f} | {statistics.median(rec):.3f} | {ratio:.3f} "
                f"({min(ratios):.3f} to {max(ratios):.3f})"
            )
            print(f"{name}: with/without records, {what} time, median ratio {ratio:.3f}")
        rows.append(f"| {name} | {' | '.join(cells)} |")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = "\n".join(
        [
            START,
            "## Recording first-success iterations and minimal norms "
            "(benchmarks/bench_attack_records.py)",
            "",
            f"{now}; {cpu_name()}, {torch.get_num_threads()} torch threads; "
            f"{args.limit} Fashion-MNIST images in batches of {args.batch}, vit_nano_fmnist, "
            f"{args.rounds} interleaved rounds; load average (1, 5, 15 min) {load_before} "
            f"before, {load_average()} after.",
            "",
            f"Goal: ratio <= {GOAL}.",
            "",
            "| attack | wall s, without | wall s, with | wall ratio (range) | CPU s, without | "
            "CPU s, with | CPU ratio (range) |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            END,
        ]
    )
    write_section(args.output, section, START, END)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
