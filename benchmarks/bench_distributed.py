"""Distributed evaluation: `torchrun --nproc_per_node=2` against one process on the same work.

Run from the repository root:

    .venv/bin/python benchmarks/bench_distributed.py          # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_distributed.py --quick --output /tmp/d.md

Both sides are whole `robench eval` processes on the shipped `vit_nano_fmnist` (the same
seeded Fashion-MNIST test images, the same batch size and seed), with the thread settings a
user gets by default (OMP_NUM_THREADS and MKL_NUM_THREADS removed from the environment):

- `1 process`: `python -m robench eval ...` (torch's default intra-op threads);
- `2 processes`: `torchrun --standalone --nproc_per_node=2 -m robench eval ...` (torchrun sets
  OMP_NUM_THREADS=1, robench then gives each process its share of the cores:
  robench/_core/distributed.py).

Work: a PGD-10 suite (L-inf 8/255, step 2/255, random start) on `--limit-pgd` images, where
model compute dominates, and a clean suite on `--limit-clean` images. Rounds in ABBA order
(1, 2, 2, 1, ...) after one small untimed warm-up of each launcher (file caches). Reported:
median seconds per side, the speed-up (median over rounds of the per-round ratio 1-process
time / 2-process time; goal >= 1.6), the same ratio for the batch loop alone (the result's
`wall_time_s`: rank 0's loop over its half of the batches), whether the two reports have
identical metrics and per-sample columns, and where each side's time goes (start-up and exit:
process time minus the report's `wall_time_s`; set-up, merge and report: `wall_time_s` minus
the batch loop). A thread pass runs the PGD work on `--limit-threads` images under four
thread settings (both defaults; one process with OMP_NUM_THREADS=1; two processes with
OMP_NUM_THREADS=2, oversubscribed) and compares the batch loops' images per second; the
section explains from these numbers what bounds the speed-up. The section between the
`bench_distributed` markers of the output file is replaced, or appended when absent.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from report_sections import cpu_name, load_average, write_section

ROOT = Path(__file__).resolve().parents[1]
MODEL = "vit_nano_fmnist"
START, END = "<!-- bench_distributed -->", "<!-- /bench_distributed -->"
GOAL = 1.6
BUSY_LOAD = 0.5  # 1-minute load average before the run above which the section says so
SUITES = {
    "clean": '[[perturbations]]\nkind = "clean"\n',
    "pgd-10": (
        '[[perturbations]]\nkind = "pgd"\nname = "pgd-10"\neps = "8/255"\nsteps = 10\n'
        'step_size = "2/255"\nrandom_start = true\n'
    ),
}
TORCHRUN = [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc_per_node=2"]
LAUNCHERS = {"1 process": [sys.executable], "2 processes": TORCHRUN}
# The environment of a user who set no thread count.
BASE_ENV = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}


@dataclass
class Run:
    seconds: float  # the whole command, launcher included
    evaluate: float  # the report's wall_time_s (rank 0's evaluate)
    loop: float  # the results' wall_time_s summed (rank 0's batch loop)
    threads: int  # the report's environment.num_threads (rank 0)
    report: dict


def run(side: str, kind: str, limit: int, args: argparse.Namespace, work: Path, **env: str) -> Run:
    suite = work / f"{kind}.toml"
    suite.write_text(f'name = "bench-{kind}"\nversion = 1\nmetrics = ["top1"]\n{SUITES[kind]}')
    out = work / f"{kind}-{side.replace(' ', '')}.json"
    command = [
        *LAUNCHERS[side], "-m", "robench", "eval", MODEL, "-s", str(suite),
        "--limit", str(limit), "-b", str(args.batch_size), "-o", str(out), "--overwrite",
    ]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**BASE_ENV, **env})
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    report = json.loads(out.read_text())
    loop = sum(r["wall_time_s"] for r in report["results"])
    threads = report["environment"]["num_threads"]
    return Run(seconds, report["wall_time_s"], loop, threads, report)


def same_numbers(a: dict, b: dict) -> bool:
    """Identical metrics (values and intervals) and per-sample columns."""
    metrics = [[(r["name"], r["metrics"]) for r in x["results"]] for x in (a, b)]
    return metrics[0] == metrics[1] and a["samples"] == b["samples"]


@dataclass
class Measured:
    runs: dict[str, list[Run]]  # side -> one run per round
    ratio: float  # median over rounds of 1-process seconds / 2-process seconds
    loop_ratio: float  # the same for the batch loops
    identical: bool  # metrics and per-sample columns, last round


def measure(kind: str, limit: int, args: argparse.Namespace, work: Path) -> Measured:
    runs: dict[str, list[Run]] = {side: [] for side in LAUNCHERS}
    ratios, loop_ratios = [], []
    for r in range(args.rounds):
        order = list(LAUNCHERS) if r % 2 == 0 else list(reversed(LAUNCHERS))
        for side in order:
            runs[side].append(run(side, kind, limit, args, work))
        one, two = runs["1 process"][-1], runs["2 processes"][-1]
        ratios.append(one.seconds / two.seconds)
        loop_ratios.append(one.loop / two.loop)
        print(
            f"{kind} round {r}: 1 process {one.seconds:.2f} s (loop {one.loop:.2f}), "
            f"2 processes {two.seconds:.2f} s (loop {two.loop:.2f}); load {load_average()}",
            flush=True,
        )
    last = {side: runs[side][-1].report for side in LAUNCHERS}
    return Measured(
        runs,
        statistics.median(ratios),
        statistics.median(loop_ratios),
        same_numbers(last["1 process"], last["2 processes"]),
    )


THREAD_CONFIGS = {  # name -> (launcher, environment added to BASE_ENV)
    "1 process, default": ("1 process", {}),
    "2 processes, default": ("2 processes", {}),
    "1 process, OMP_NUM_THREADS=1": ("1 process", {"OMP_NUM_THREADS": "1"}),
    "2 processes, OMP_NUM_THREADS=2": ("2 processes", {"OMP_NUM_THREADS": "2"}),
}


def thread_pass(limit: int, args: argparse.Namespace, work: Path) -> dict[str, list[Run]]:
    """The PGD work under each of THREAD_CONFIGS, in an order reversed every round."""
    runs: dict[str, list[Run]] = {name: [] for name in THREAD_CONFIGS}
    for r in range(args.thread_rounds):
        order = list(THREAD_CONFIGS) if r % 2 == 0 else list(reversed(THREAD_CONFIGS))
        for name in order:
            side, env = THREAD_CONFIGS[name]
            runs[name].append(run(side, "pgd-10", limit, args, work, **env))
            print(f"threads: {name}: loop {runs[name][-1].loop:.2f} s", flush=True)
    return runs


def _median(runs: list[Run], field: str) -> float:
    return statistics.median(getattr(run, field) for run in runs)


def _throughput(runs: list[Run], limit: int) -> float:
    """Images per second of the node's batch loops: rank 0's loop scores its share of the
    images while the other ranks score theirs."""
    return limit / _median(runs, "loop")


def _thread_lines(
    threads: dict[str, list[Run]],
    args: argparse.Namespace,
    pgd: Measured,
    parts: dict[tuple[str, str], tuple[float, float, float]],
) -> list[str]:
    """The thread table and what bounds the speed-up, in numbers."""
    speed = {name: _throughput(runs, args.limit_threads) for name, runs in threads.items()}
    base = speed["1 process, default"]
    lines = [
        "",
        f"Thread settings: PGD-10 batch loops on {args.limit_threads} images, "
        f"{args.thread_rounds} runs each in an order reversed every round:",
        "",
        "| configuration | threads per process | batch loop images/s (node) "
        "| relative to 1 process, default |",
        "|---|---:|---:|---:|",
    ]
    for name, runs in threads.items():
        ips = speed[name]
        lines.append(f"| {name} | {runs[-1].threads} | {ips:.1f} | {ips / base:.2f} |")
    gain = base / speed["1 process, OMP_NUM_THREADS=1"]  # 2 threads over 1, one process
    sharding = speed["2 processes, default"] / speed["1 process, OMP_NUM_THREADS=1"]
    over = speed["2 processes, OMP_NUM_THREADS=2"] / base
    (up1, rest1, _), (up2, rest2, _) = parts["pgd-10", "1 process"], parts["pgd-10", "2 processes"]
    if gain > 1:
        threads_text = (
            "one process already computes on both cores with torch's intra-op threads: its "
            f"batch loop runs {gain:.2f}x faster with two threads than with one, so two "
            f"one-thread processes can gain at most about {2 / gain:.2f}x on the loop over it "
            f"(measured: {pgd.loop_ratio:.2f}x)"
        )
    else:
        threads_text = (
            f"one process's two intra-op threads ran slower than one thread ({gain:.2f}x): "
            "they wait for each other at every operation, so other work taking one core (see "
            "the load average) stalls both; separate processes do not wait for each other"
        )
    verdict = "meets" if pgd.ratio >= GOAL else "misses"
    return [
        *lines,
        "",
        f"PGD-10 {verdict} the goal ({pgd.ratio:.2f} against {GOAL}). What bounds it: "
        f"{threads_text}. Against one process with one thread, two processes score "
        f"{sharding:.2f}x the images per second: the sharding itself scales. Fixed costs do "
        "not shrink with more processes: torchrun imports torch before it starts the workers, "
        "and two workers import torch at once on two cores "
        f"({up2:.2f} s of start-up and exit against {up1:.2f} s for one process); set-up "
        "(model, data, checks, gloo), the barrier, the merge of the per-rank stores and the "
        f"report take {rest2:.2f} s against {rest1:.2f} s. Two processes with two threads "
        f"each oversubscribe the cores ({over:.2f}x the one-process throughput); torchrun "
        "avoids that with OMP_NUM_THREADS=1 when it is unset, and robench gives each process "
        f"its share of the CPUs (here {threads['2 processes, default'][-1].threads}; on larger "
        "nodes more: docs/distributed.md).",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few images, two rounds")
    parser.add_argument("--limit-pgd", type=int, default=1000)
    parser.add_argument("--limit-clean", type=int, default=10000)
    parser.add_argument("--limit-threads", type=int, default=400, help="images, thread pass")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--thread-rounds", type=int, default=2, help="0 skips the thread pass")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    if args.quick:
        args.limit_pgd, args.limit_clean, args.limit_threads = 200, 2000, 200
        args.rounds, args.thread_rounds = 2, 2
    started, before = datetime.datetime.now(datetime.timezone.utc), load_average()
    busy = os.getloadavg()[0] > BUSY_LOAD  # other work competes for the cores
    limits = {"pgd-10": args.limit_pgd, "clean": args.limit_clean}
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for side in LAUNCHERS:  # warm-up: file caches of the libraries and the data
            run(side, "clean", 2 * args.batch_size, args, work)
        for kind, limit in limits.items():
            results[kind] = measure(kind, limit, args, work)
        threads = thread_pass(args.limit_threads, args, work) if args.thread_rounds else {}
    cores = len(os.sched_getaffinity(0))
    pgd = results["pgd-10"].runs
    default_threads = {side: runs[-1].threads for side, runs in pgd.items()}
    lines = [
        START,
        "## Distributed: 2 processes vs 1 on the same work (benchmarks/bench_distributed.py)",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC",
        f"- machine: {cpu_name()}, {cores} CPUs; torch {torch.__version__}",
        f"- threads (the report's `environment.num_threads`): 1 process "
        f"{default_threads['1 process']} (torch's default); 2 processes "
        f"{default_threads['2 processes']} each (OMP_NUM_THREADS unset: torchrun sets 1, "
        "robench gives each process max(1, CPUs // local processes))",
        f"- load average (1, 5, 15 min) before: {before}; after: {load_average()}",
        *(
            [
                f"- **busy machine**: a 1-minute load average above {BUSY_LOAD} before the run "
                "means other processes were competing for the cores; the numbers below include "
                "that contention (it hurts one process's intra-op threads most). Re-run on a "
                "quiet machine for the speed-up robench itself gives."
            ]
            if busy
            else []
        ),
        f"- command: `python {shlex.join(['benchmarks/bench_distributed.py', *sys.argv[1:]])}`; "
        f"model `{MODEL}`, Fashion-MNIST test images (seeded subset), batch {args.batch_size}, "
        f"{args.rounds} rounds in ABBA order after a warm-up; 2 processes: "
        "`torchrun --standalone --nproc_per_node=2 -m robench eval ...`",
        "",
        "| work | images | 1 process s (median) | 2 processes s (median) | speed-up "
        "| batch loop speed-up | goal | metrics identical |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for kind, r in results.items():
        verdict = "pass" if r.ratio >= GOAL else "not met"
        lines.append(
            f"| {kind} | {limits[kind]} | {_median(r.runs['1 process'], 'seconds'):.2f} | "
            f"{_median(r.runs['2 processes'], 'seconds'):.2f} | {r.ratio:.2f} | "
            f"{r.loop_ratio:.2f} | >= {GOAL} {verdict} | "
            f"{'yes' if r.identical else 'NO'} |"
        )
    lines += [
        "",
        "Where the time goes (medians, seconds; 2 processes: rank 0):",
        "",
        "| work | side | whole command | start-up and exit | set-up, merge, report | batch loop |",
        "|---|---|---:|---:|---:|---:|",
    ]
    parts: dict[tuple[str, str], tuple[float, float, float]] = {}
    for kind, r in results.items():
        for side, side_runs in r.runs.items():
            whole, evaluate, loop = (_median(side_runs, f) for f in ("seconds", "evaluate", "loop"))
            parts[kind, side] = (whole - evaluate, evaluate - loop, loop)
            lines.append(
                f"| {kind} | {side} | {whole:.2f} | {whole - evaluate:.2f} | "
                f"{evaluate - loop:.2f} | {loop:.2f} |"
            )
    if threads:
        lines += _thread_lines(threads, args, results["pgd-10"], parts)
    lines.append(END)
    section = "\n".join(lines)
    print(section)
    write_section(args.output, section, START, END)


if __name__ == "__main__":
    main()
