"""Samples and time the sequential gate saves: `robench gate --sequential` against the fixed-n
gate, on the shipped model and its committed baseline (what `make gate` runs).

Run from the repository root:

    .venv/bin/python benchmarks/bench_sequential_gate.py            # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_sequential_gate.py --output /tmp/s.md

- fixed-n: the candidate evaluated on all of the baseline's samples (the smoke suite, 1,000
  Fashion-MNIST test images, seed 0), then `robench gate` (exact McNemar, Holm);
- sequential: `gate --sequential`, which evaluates the candidate in the seeded random order,
  64 samples at a time, until every check has passed or one has regressed (paired betting
  tests at alpha / 6).
The verdicts are asserted equal; reported are the samples each evaluated, their wall times
(one process, CPU) and the saving.
"""

from __future__ import annotations

import argparse
import datetime
import tempfile
import time
from pathlib import Path

from report_sections import cpu_name, load_average, write_section

from robench.evaluation.gate_run import Candidate, candidate_request, run_sequential_gate
from robench.evaluation.request import evaluate
from robench.results.gate.policy import Policy
from robench.results.gate.regression import run_gate
from robench.results.report.schema import read_report

MODEL = "vit_nano_elliptical_fmnist"
BASELINE = Path("reports/baselines/vit_nano_elliptical_fmnist-smoke.json")
START, END = "<!-- bench_sequential_gate:start -->", "<!-- bench_sequential_gate:end -->"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--output", type=Path, default=Path("reports/benchmarks.md"))
    args = parser.parse_args()
    load_before = load_average()
    baseline = read_report(args.baseline)
    policy = Policy()
    with tempfile.TemporaryDirectory() as tmp:
        fixed_out = Path(tmp) / "fixed.json"
        started = time.perf_counter()
        fixed_report = evaluate(candidate_request(baseline, Candidate(args.model, None, fixed_out)))
        fixed_s = time.perf_counter() - started
        fixed = run_gate(baseline, fixed_report, policy)
        started = time.perf_counter()
        found = run_sequential_gate(
            baseline, policy, Candidate(args.model, None, Path(tmp) / "sequential.json")
        )
        sequential_s = time.perf_counter() - started
    info = found.candidate.sequential
    assert info is not None
    assert found.status is fixed.status, (found.status, fixed.status)
    n_fixed = fixed_report.results[0].n_samples
    saved = 1 - info.n_stopped / n_fixed
    rows = [
        f"| fixed-n (`eval` + `gate`) | {fixed.status.value} | {n_fixed} | {fixed_s:.1f} |",
        f"| sequential (`gate --sequential`) | {found.status.value} | {info.n_stopped} | "
        f"{sequential_s:.1f} |",
    ]
    for line in rows:
        print(line)
    print(f"samples saved: {saved:.1%}; time saved: {1 - sequential_s / fixed_s:.1%}")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        START,
        "# Benchmark: sequential gate vs fixed-n gate (`make gate`)",
        "",
        f"- date: {now}; {cpu_name()}; one process on CPU",
        f"- load average (1, 5, 15 min) before: {load_before}; after: {load_average()}",
        "- command: `python benchmarks/bench_sequential_gate.py`",
        f"- candidate `{args.model}` against `{args.baseline}` (suite {baseline.suite.name} "
        f"v{baseline.suite.version}: clean, FGSM, PGD-5; {n_fixed} samples, seed "
        f"{baseline.seed}); default policy (clean top1 1 pp, the rest 2 pp, alpha 0.05)",
        "- sequential: chunks of 64 in the seeded random order, paired betting tests at alpha / "
        f"{len(found.checks)} per check; stops when every check passed or one regressed",
        "",
        "| gate | verdict | samples evaluated | wall s |",
        "|---|---|---:|---:|",
        *rows,
        "",
        f"Same verdict on {info.n_stopped} instead of {n_fixed} samples: {saved:.0%} fewer "
        f"samples, {1 - sequential_s / fixed_s:.0%} less wall time (a loaded 2-core machine: "
        "times are noisy, the sample count is not).",
        END,
    ]
    write_section(args.output, "\n".join(lines), START, END)


if __name__ == "__main__":
    main()
