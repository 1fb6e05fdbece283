"""Start-up time of robench's light commands, as whole processes, beside `python -c pass`.

Run from the repository root (after `make install`):

    .venv/bin/python benchmarks/bench_cli.py                      # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_cli.py --before main        # also times main's code
    .venv/bin/python benchmarks/bench_cli.py --rounds 5 --output /tmp/cli.md

Each round runs every command once (and, with `--before REV`, once more from the source tree
of git revision REV, exported to a temporary directory with `git archive` and run by the same
interpreter and packages), in an order rotated by one each round, so a slow drift of a shared
machine hits every command and both trees alike. Reported: the median wall time per command,
the median over rounds of its per-round difference to `python -c pass` (the interpreter's own
start-up) and, with --before, the median of per-round ratios after/before. Goals: `--help` and
`--version` at most 0.25 s, `compare` and `gate` at most 0.4 s, the rest 0.5 s. Wrong input
to `robench eval` (an unknown suite or model, a missing checkpoint, a timm tag or Hub repo
absent from the cache) must exit 2 within 1 s of CPU time (user + system of the child, which
a busy machine does not inflate as it does the wall time). The section between the
`bench_cli` markers of the output file is replaced; the rest is kept.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report_sections import load_average, write_section

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "reports" / "demo"
ROBENCH = [sys.executable, "-m", "robench"]  # `-m` runs the tree in the working directory
PASS = "python -c pass"
COMMANDS: dict[str, list[str]] = {
    PASS: [sys.executable, "-c", "pass"],
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
# Wrong input answered before torch loads (robench/evaluation/checks/preflight.py): exit 2.
WRONG_INPUT: dict[str, list[str]] = {
    "eval: unknown suite": [*ROBENCH, "eval", "vit_nano_elliptical_fmnist", "--suite", "smok"],
    "eval: unknown model": [*ROBENCH, "eval", "vit_nano_elliptical_fmnis"],
    "eval: missing checkpoint": [*ROBENCH, "eval", "-c", "no/such/model.safetensors"],
    "eval: timm tag not cached": [*ROBENCH, "eval", "resnet50.a1_in1k"],  # HF_HOME: empty
    "eval: unknown timm tag": [*ROBENCH, "eval", "resnet50.no_such_tag_in1k"],
    "eval: Hub repo not cached": [*ROBENCH, "eval", "hf-hub:timm/no_such_model"],
}
COMMANDS.update(WRONG_INPUT)
# CPU seconds (user + system), median, for the wrong-input cases (issue 47).
CPU_GOAL_S = 1.0
# Seconds, median, on the 2-core reference machine (issue 24); others: GOAL_S.
GOALS = {
    "robench --help": 0.25,
    "robench --version": 0.25,
    "robench compare (2 reports)": 0.4,
    "robench gate (2 reports)": 0.4,
}
GOAL_S = 0.5
START, END = "<!-- bench_cli -->", "<!-- /bench_cli -->"


def _time(argv: list[str], cwd: Path, expected: int = 0) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of `argv`. The CPU time is
    what a quiet machine's wall time would be for a single-threaded start-up, give or take
    file reads: waiting for a core on a busy machine adds to the wall time only."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != expected:
        raise subprocess.CalledProcessError(process.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime


def export_tree(rev: str, into: Path) -> Path:
    """The package, suites and model cards of git revision `rev`, in `into` (run with -m)."""
    archive = subprocess.run(
        ["git", "archive", rev, "robench", "attacks", "models"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


Times = dict[tuple[str, str], list[tuple[float, float]]]


def measure(rounds: int, trees: dict[str, Path]) -> Times:
    """(command, tree label) -> (wall, CPU) seconds per round; `python -c pass` is timed once
    per round."""
    runs = [
        (name, label) for name in COMMANDS for label in trees if name != PASS or label == "after"
    ]
    times: Times = {run: [] for run in runs}
    for name, label in runs:  # warm-up: file-system and bytecode caches
        _time(COMMANDS[name], trees[label], _exit_code(name))
    for r in range(rounds):
        for name, label in runs[r % len(runs) :] + runs[: r % len(runs)]:
            times[(name, label)].append(_time(COMMANDS[name], trees[label], _exit_code(name)))
    return times


def _exit_code(name: str) -> int:
    return 2 if name in WRONG_INPUT else 0


def _medians(values: list[tuple[float, float]]) -> str:
    wall, cpu = (statistics.median(v[i] for v in values) for i in (0, 1))
    return f"{wall:.3f} ({cpu:.3f})"


def _row(name: str, times: Times, before: bool) -> str:
    after = times[(name, "after")]
    base = times[(PASS, "after")]
    extra = statistics.median(v[0] - b[0] for v, b in zip(after, base, strict=True))
    if name in WRONG_INPUT:  # judged on CPU time
        median, goal, of = statistics.median(c for _, c in after), CPU_GOAL_S, " CPU"
    else:
        median, goal, of = statistics.median(w for w, _ in after), GOALS.get(name, GOAL_S), ""
    met = "" if name == PASS else ("yes" if median <= goal else "no") + of
    cells = [f"`{name}`", _medians(after), f"{extra:+.3f}", "" if name == PASS else f"{goal}", met]
    if before:
        if name == PASS:
            cells[1:1] = [_medians(after)]
            cells.append("")
        else:
            old = times[(name, "before")]
            ratio = statistics.median(a[0] / b[0] for a, b in zip(after, old, strict=True))
            cpu = statistics.median(a[1] / b[1] for a, b in zip(after, old, strict=True))
            cells[1:1] = [_medians(old)]
            cells.append(f"{ratio:.2f} ({cpu:.2f})")
    return "| " + " | ".join(cells) + " |"


def render(
    times: Times,
    rounds: int,
    loads: tuple[str, str],
    before_rev: str | None,
) -> str:
    head = (
        "| command | median s wall (CPU) | median of (command - python -c pass) s wall | goal s "
        "| goal met (wall; CPU where marked) |"
    )
    rule = "|---|---:|---:|---:|---|"
    if before_rev:
        head = (
            f"| command | before ({before_rev}) median s wall (CPU) | after median s wall (CPU) "
            "| after - python -c pass s wall | goal s | goal met (wall; CPU where marked) "
            "| after/before, median of "
            "per-round ratios, wall (CPU) |"
        )
        rule = "|---|---:|---:|---:|---:|---|---:|"
    lines = [
        START,
        "## Command-line start-up (benchmarks/bench_cli.py)",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- machine: {platform.processor() or platform.machine()}; nproc {os.cpu_count()}; "
        f"Python {platform.python_version()}",
        f"- load average (1, 5, 15 min) before: {loads[0]}; after: {loads[1]}",
        f"- {rounds} rounds, commands interleaved in rotated order, whole processes"
        + (f"; `before` = the tree of `{before_rev}`, same interpreter" if before_rev else ""),
        *_busy_note(*loads),
        "",
        head,
        rule,
        *(_row(name, times, before_rev is not None) for name in COMMANDS),
    ]
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
        "also waited for a CPU, so compare commands (and trees) with each other, not with the goal"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--before", metavar="REV", help="also time this git revision's tree")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as scratch:
        # An empty Hugging Face cache: "not cached" stays true on a machine that has the tag.
        os.environ["HF_HOME"] = str(Path(scratch) / "hf-home")
        trees = {"after": ROOT}
        if args.before:
            trees["before"] = export_tree(args.before, Path(scratch))
        load_before = load_average()
        times = measure(args.rounds, trees)
        section = render(times, args.rounds, (load_before, load_average()), args.before)
    print(section)
    write_section(args.output, section, START, END)


if __name__ == "__main__":
    main()
