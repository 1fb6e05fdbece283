"""Cost of the calibration records: a clean pass with them against the same pass without.

Run from the repository root:

    .venv/bin/python benchmarks/bench_calibration_records.py     # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_calibration_records.py --quick --output /tmp/c.md

Three sides, all asking top-1 and top-5, the last also ECE, NLL and Brier:
"without" is robench before the records (`calibration_columns` replaced by one returning
nothing); "records" is robench as it is, every classification record keeping `p_pred`,
`p_target`, `logp_target` and `p_sumsq` (tasks/top_k_records.py); "records + metrics" also
computes the three calibration metrics with their 2,000-resample bootstrap intervals (the
task's default metrics). The goal is the records' cost; the metrics' is reported beside it.
On the shipped `vit_nano_fmnist`, Fashion-MNIST's seeded test images, one batch size:

1. Whole clean passes (`evaluation.request.evaluate`: model, data, checks, batches, the
   per-sample store and the report), side by side in one process, the order reversed every
   round, after an untimed warm-up of each side. Reported: median seconds per side, the median
   over rounds of the per-round time ratio to "without", its middle half, and the ratio of
   the fastest rounds (goal for "records": at most 1.02).
2. The per-batch work alone (seeded scoring and a stored line), with and without the
   records alternating batch by batch on the same images loaded once, so the machine's slow
   spells fall on both sides alike: a more precise view of what the records cost per batch.

The section between the `bench_calibration_records` markers of the output file is replaced,
or appended when absent.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from report_sections import cpu_name, load_average, write_section
from torch.utils.data import DataLoader, Subset

import robench.tasks.top_k_records as top_k_records
from robench._core.batching import batch_indices
from robench._core.seeding import derive_seed
from robench.data import open_dataset
from robench.data.subset import select_indices
from robench.evaluation.request import EvalRequest, evaluate
from robench.evaluation.runner import score_seeded
from robench.evaluation.store.sample_store import SampleStore
from robench.models.loading import load_model
from robench.tasks.registry import load_task

ROOT = Path(__file__).resolve().parents[1]
MODEL = "vit_nano_fmnist"
START, END = "<!-- bench_calibration_records -->", "<!-- /bench_calibration_records -->"
GOAL = 1.02  # with / without: at most 2% more time
CLEAN = '[[perturbations]]\nkind = "clean"\n'
ACCURACY = '["top1", "top5"]'
# Side -> (calibration records kept, the suite's metrics; None: the task's defaults).
SIDES = {
    "without": (False, ACCURACY),
    "records": (True, ACCURACY),
    "records + metrics": (True, None),
}
_WITH_RECORDS = top_k_records.calibration_columns


def _no_calibration_columns(*_: Any) -> dict[str, list[Any]]:
    return {}


@contextlib.contextmanager
def records(kept: bool) -> Iterator[None]:
    """robench with (as it is) or without the calibration records."""
    top_k_records.calibration_columns = (  # type: ignore[assignment]
        _WITH_RECORDS if kept else _no_calibration_columns
    )
    try:
        yield
    finally:
        top_k_records.calibration_columns = _WITH_RECORDS


def _run(side: str, limit: int, batch: int, work: Path) -> Callable[[], dict[str, Any]]:
    kept, listed = SIDES[side]
    suite = work / f"{side.replace(' + ', '-')}.toml"
    metrics = f"metrics = {listed}\n" if listed else ""
    suite.write_text(f'name = "bench-calibration"\nversion = 1\n{metrics}{CLEAN}')

    def run() -> dict[str, Any]:
        with records(kept):
            report = evaluate(
                EvalRequest(
                    suite=str(suite),
                    data="fashion-mnist",
                    out=work / f"{side.replace(' + ', '-')}.json",
                    model=MODEL,
                    limit=limit,
                    batch_size=batch,
                    overwrite=True,
                )
            )
        return {k: v.value for k, v in report.results[0].metrics.items()}

    return run


def whole_passes(limit: int, batch: int, rounds: int, work: Path) -> dict[str, Any]:
    sides = {side: _run(side, limit, batch, work) for side in SIDES}
    metrics = {side: run() for side, run in sides.items()}  # warm-up
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    ratios: dict[str, list[float]] = {side: [] for side in SIDES}
    for r in range(rounds):
        seconds = {}
        for side in list(SIDES) if r % 2 == 0 else list(SIDES)[::-1]:
            start = time.perf_counter()
            metrics[side] = sides[side]()
            seconds[side] = time.perf_counter() - start
            times[side].append(seconds[side])
        for side in SIDES:
            ratios[side].append(seconds[side] / seconds["without"])
    out: dict[str, Any] = {"metrics": metrics}
    for side in SIDES:
        quartiles = statistics.quantiles(ratios[side], n=4) if rounds > 1 else ratios[side] * 3
        out[side] = {
            "seconds": statistics.median(times[side]),
            "ratio": statistics.median(ratios[side]),
            "spread": (quartiles[0], quartiles[-1]),
            # Interference only adds time: a side's fastest round is closest to its own cost.
            "fastest": min(times[side]) / min(times["without"]),
        }
    return out


def interleaved(limit: int, batch: int, passes: int, work: Path) -> float:
    """Per-batch work (seeded scoring and a stored line) with / without the records,
    alternating batch by batch; the median over passes of the time ratio."""
    loaded = load_model(MODEL)
    assert loaded.preprocessing is not None
    data = open_dataset("fashion-mnist", preprocessing=loaded.preprocessing)
    indices = select_indices(len(data), limit, 0)
    task = load_task("image-classification")
    loader = DataLoader(Subset(data, indices), batch_size=batch)
    batches = list(zip(batch_indices(indices, batch), loader, strict=True))
    ratios = []
    for p in range(passes):
        seconds = {"with": 0.0, "without": 0.0}  # records kept or not
        stores = {s: SampleStore(work / f"{s}-{p}.jsonl", {"p": p}, resume=False) for s in seconds}
        try:
            for n, (chunk, (images, labels)) in enumerate(batches):
                for side in ("with", "without") if n % 2 == 0 else ("without", "with"):
                    with records(side == "with"):
                        start = time.perf_counter()
                        seed = derive_seed(0, "", n)
                        columns = score_seeded(loaded.model, task, images, labels, seed)
                        stores[side].append("clean", chunk, columns)
                        seconds[side] += time.perf_counter() - start
        finally:
            for store in stores.values():
                store.close()
        ratios.append(seconds["with"] / seconds["without"])
    return statistics.median(ratios)


def _verdict(low: float, high: float) -> str:
    """pass or FAIL only when the middle half of the rounds is on one side of the goal."""
    if high <= GOAL:
        return "pass"
    if low > GOAL:
        return "FAIL"
    return "inside noise (the middle half of the rounds straddles the goal)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few images, two rounds")
    parser.add_argument("--limit", type=int, default=10000)  # the whole test split
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--passes", type=int, default=3, help="passes of the interleaved check")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    if args.quick:
        args.limit, args.rounds, args.passes = 1000, 2, 1
    started, before = datetime.datetime.now(datetime.timezone.utc), load_average()
    with tempfile.TemporaryDirectory() as tmp:
        whole = whole_passes(args.limit, args.batch_size, args.rounds, Path(tmp))
        print("whole", whole)
        per_batch = interleaved(args.limit, args.batch_size, args.passes, Path(tmp))
        print("interleaved", per_batch)
    lines = [
        START,
        "## Calibration records: a clean pass with vs without them "
        "(benchmarks/bench_calibration_records.py)",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC",
        f"- machine: {cpu_name()}; torch {torch.__version__}, threads {torch.get_num_threads()}",
        f"- load average (1, 5, 15 min) before: {before}; after: {load_average()}",
        f"- command: `python benchmarks/bench_calibration_records.py"
        f"{' --quick' if args.quick else ''} --limit {args.limit} --rounds {args.rounds} "
        f"--passes {args.passes}`; model `{MODEL}`, {args.limit} Fashion-MNIST "
        f"test images, batch {args.batch_size}, {args.rounds} rounds, the order reversed every "
        "round, after a warm-up",
        "",
        "| clean pass, whole run | s (median) | time / without (median) | middle half of rounds "
        "| fastest rounds | goal |",
        "|---|---:|---:|---|---:|---|",
    ]
    for side in SIDES:
        r = whole[side]
        low, high = r["spread"]
        goal = ""
        if side == "records":
            goal = f"<= {GOAL} {_verdict(low, high)}"
        lines.append(
            f"| {side} | {r['seconds']:.2f} | {r['ratio']:.3f} | {low:.3f} to {high:.3f} | "
            f"{r['fastest']:.3f} | {goal} |"
        )
    found = whole["metrics"]
    full = found["records + metrics"]
    lines += [
        "",
        f"Per-batch work alone (seeded scoring and a stored line), with and without the records "
        f"alternating batch by batch ({args.passes} passes): time with / without "
        f"{per_batch:.3f}.",
        "",
        f"Same predictions on every side (top-1 {found['without']['top1']:.4f} without, "
        f"{found['records']['top1']:.4f} with the records); the metrics side reports ECE "
        f"{full['ece']:.4f}, NLL {full['nll']:.4f} and Brier {full['brier']:.4f}.",
        END,
    ]
    write_section(args.output, "\n".join(lines), START, END)


if __name__ == "__main__":
    main()
