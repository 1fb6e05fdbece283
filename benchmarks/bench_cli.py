"""Start-up time of robench's light commands, as whole processes, beside `python -c pass`.

Run from the repository root (after `make install`):

    .venv/bin/python benchmarks/bench_cli.py                 # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_cli.py --rounds 5 --output /tmp/cli.md

Each round runs every command once, in an order rotated by one each round, so a slow drift
of a shared machine hits all commands alike. Reported: the median wall time per command and
the median over rounds of its per-round difference to `python -c pass` (the interpreter's own
start-up), against the goal of at most 0.5 s median per command on the reference machine.
The section between the `bench_cli` markers of the output file is replaced; the rest is kept.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from report_sections import load_average, write_section

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "reports" / "demo"
ROBENCH = [sys.executable, "-m", "robench"]
COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "robench --help": [*ROBENCH, "--help"],
    "robench --version": [*ROBENCH, "--version"],
    "robench list suites": [*ROBENCH, "list", "suites"],
    "robench list perturbations": [*ROBENCH, "list", "perturbations"],
    "robench list metrics": [*ROBENCH, "list", "metrics"],
    "robench validate smoke demo": [*ROBENCH, "validate", "smoke", "demo"],
    "robench schema": [*ROBENCH, "schema"],
    "robench compare (2 reports)": [
        *ROBENCH, "compare", str(DEMO / "baseline.json"), str(DEMO / "elliptical.json")
    ],
    "robench gate (2 reports)": [
        *ROBENCH, "gate", "-b", str(DEMO / "baseline.json"), "-c", str(DEMO / "baseline.json")
    ],
}  # fmt: skip
START, END = "<!-- bench_cli -->", "<!-- /bench_cli -->"
GOAL_S = 0.5


def _time(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def measure(rounds: int) -> dict[str, list[float]]:
    names = list(COMMANDS)
    times: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm-up: file-system caches
        _time(COMMANDS[name])
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            times[name].append(_time(COMMANDS[name]))
    return times


def render(times: dict[str, list[float]], rounds: int, load_before: str, load_after: str) -> str:
    base = times["python -c pass"]
    lines = [
        START,
        "## Command-line start-up (benchmarks/bench_cli.py)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.processor() or platform.machine()}; nproc {os.cpu_count()}; "
        f"Python {platform.python_version()}",
        f"- load average (1, 5, 15 min) before: {load_before}; after: {load_after}",
        f"- {rounds} rounds, commands interleaved in rotated order, whole processes; goal: "
        f"median <= {GOAL_S} s per command",
        *_busy_note(load_before, load_after),
        "",
        "| command | median s | median of (command - python -c pass) s | goal met |",
        "|---|---:|---:|---|",
    ]
    for name, values in times.items():
        extra = statistics.median(v - b for v, b in zip(values, base, strict=True))
        median = statistics.median(values)
        met = "" if name == "python -c pass" else ("yes" if median <= GOAL_S else "no")
        lines.append(f"| `{name}` | {median:.3f} | {extra:+.3f} | {met} |")
    return "\n".join([*lines, END])


def _busy_note(*loads: str) -> list[str]:
    """A warning line when the 1-minute load average exceeded the core count: then every
    command also waited for a CPU, and the times say more about the machine than about robench."""
    peak = max(float(load.split(",")[0]) for load in loads)
    cores = os.cpu_count() or 1
    if peak <= cores:
        return []
    return [
        f"- busy machine: 1-minute load reached {peak:.2f} on {cores} cores; every command "
        "also waited for a CPU, so compare commands with each other, not with the goal"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    before = load_average()
    times = measure(args.rounds)
    section = render(times, args.rounds, before, load_average())
    print(section)
    write_section(args.output, section, START, END)


if __name__ == "__main__":
    main()
