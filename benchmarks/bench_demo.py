"""Wall time of `robench demo`, this tree against another revision's, interleaved.

Run from the repository root (after `make install` and `make data`):

    .venv/bin/python benchmarks/bench_demo.py --before main          # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_demo.py --rounds 1 --output /tmp/demo.md

Each round runs the whole demo once per tree (this one, `after`, and with `--before REV` the
package, suites and shipped models of git revision REV, exported with `git archive` and run by
the same interpreter and packages), alternating which goes first, so a shared machine's load
hits both alike. Reported: per tree the median wall time of the whole process, the median of
each phase (from the demo's own `demo [  t s]` log lines), and the median over rounds of the
per-round ratio after/before. Goal: at most 90 s on the 2-core reference machine.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_cli import export_tree
from report_sections import cpu_name, load_average, write_section

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench_demo -->", "<!-- /bench_demo -->"
GOAL_S = 90.0
CPU = "CPU time of the process (user + system)"
# The demo logs `demo [  12.3s] <what it starts now>`; a phase lasts until the next line.
_STEP = re.compile(r"demo \[\s*([\d.]+)s\] (.+)")


def _phases(log: str) -> dict[str, float]:
    """Phase -> seconds, from the demo's step lines (one per line: COLUMNS=200 keeps rich from
    wrapping them)."""
    steps = [(float(m[1]), m[2].strip()) for m in map(_STEP.search, log.splitlines()) if m]
    phases = {}
    for (t0, what), (t1, _) in itertools.pairwise(steps):
        # "evaluating baseline (vit_nano_fmnist): suite demo on 500 samples" -> "baseline: demo"
        match = re.match(r"evaluating (\w+) \(.*?\): suite ([\w-]+)", what)
        name = f"{match[1]}: {match[2]}" if match else what
        phases[name] = t1 - t0
    return phases


def run_demo(tree: Path, out_dir: Path) -> tuple[float, dict[str, float]]:
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "robench", "demo", "-o", str(out_dir)],
            cwd=tree,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env={**os.environ, "COLUMNS": "200"},
        )
        _, status, usage = os.wait4(process.pid, 0)
        took = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        stderr = log.read()
    if process.returncode != 0:
        raise SystemExit(f"robench demo failed in {tree}:\n{stderr[-2000:]}")
    phases = _phases(stderr)
    # The rest: the interpreter, imports (torch, timm, ...) and listing the files written.
    phases["start-up, imports, listing"] = took - sum(phases.values())
    # CPU seconds (user + system, all threads): the work done, which waiting for a core on a
    # busy machine does not add to (spinning threads of a contended OpenMP pool still do).
    phases[CPU] = usage.ru_utime + usage.ru_stime
    return took, phases


def measure(rounds: int, trees: dict[str, Path], scratch: Path) -> dict[str, list]:
    results: dict[str, list] = {label: [] for label in trees}
    for r in range(rounds):
        order = list(trees) if r % 2 == 0 else list(trees)[::-1]
        for label in order:
            took, phases = run_demo(trees[label], scratch / f"{label}-{r}")
            print(f"round {r + 1}, {label}: {took:.1f} s", file=sys.stderr)
            results[label].append((took, phases))
    return results


def render(
    results: dict[str, list], rounds: int, loads: tuple[str, str], before: str | None
) -> str:
    labels = list(results)
    totals = {label: [t for t, _ in results[label]] for label in labels}
    lines = [
        START,
        "## `robench demo` wall time (benchmarks/bench_demo.py)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {cpu_name()}; nproc {os.cpu_count()}; Python {platform.python_version()}",
        f"- load average (1, 5, 15 min) before: {loads[0]}; after: {loads[1]}",
        f"- {rounds} round(s), whole `python -m robench demo` processes, trees alternating"
        + (f"; `before` = the tree of `{before}`, same interpreter and packages" if before else ""),
        f"- goal: at most {GOAL_S:.0f} s on the 2-core reference machine (issue 24)",
        "",
        "| phase | " + " | ".join(f"{label} median s" for label in labels) + " |",
        "|---|" + "---:|" * len(labels),
    ]
    names = list(dict.fromkeys(n for label in labels for _, p in results[label] for n in p))
    names = [n for n in names if n != CPU] + [CPU]  # the CPU row after the wall-time rows
    for name in names[:-1]:
        cells = []
        for label in labels:
            values = [p[name] for _, p in results[label] if name in p]
            cells.append(f"{statistics.median(values):.1f}" if values else "")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cpu = {label: [p[CPU] for _, p in results[label]] for label in labels}
    lines.append(
        f"| {CPU} | "
        + " | ".join(f"{statistics.median(cpu[label]):.1f}" for label in labels)
        + " |"
    )
    lines.append(
        "| **whole process** | "
        + " | ".join(f"**{statistics.median(totals[label]):.1f}**" for label in labels)
        + " |"
    )
    if before:
        ratio = statistics.median(
            a / b for a, b in zip(totals["after"], totals["before"], strict=True)
        )
        cpu_ratio = statistics.median(
            a / b for a, b in zip(cpu["after"], cpu["before"], strict=True)
        )
        lines += [
            "",
            f"after/before, median of per-round ratios: wall **{ratio:.2f}**, CPU {cpu_ratio:.2f}",
        ]
    return "\n".join([*lines, END])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--before", metavar="REV", help="also time this git revision's demo")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as scratch:
        trees = {"after": ROOT}
        if args.before:
            tree = Path(scratch) / "before"
            tree.mkdir()
            trees = {"before": export_tree(args.before, tree), "after": ROOT}
        load_before = load_average()
        results = measure(args.rounds, trees, Path(scratch))
        section = render(results, args.rounds, (load_before, load_average()), args.before)
    print(section)
    write_section(args.output, section, START, END)


if __name__ == "__main__":
    main()
