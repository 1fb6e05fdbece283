"""Coverage of robench's ECE interval by simulation on known calibration curves.

Run from the repository root (after `make install`):

    .venv/bin/python benchmarks/bench_interval_coverage.py   # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_interval_coverage.py --runs 500 --output /tmp/cov.md

A simulated classifier's confidence c is 0.1 + 0.9 x Beta(4, 1.2) (most mass above 0.8, as
a trained classifier's), and it is right with probability f(c), a known calibration curve.
The true 15-bin ECE is sum_b P(c in b) |E[f(c) - c | c in b]|, integrated numerically (a
midpoint rule on 2,000,000 points). Each run draws n samples, computes robench's ECE and its
reported 95% interval (`CalibrationError.interval`: 2,000 resamples, seed 0, the estimate
+- 1.96 bootstrap standard errors within [0, 1]) and counts whether the interval holds the
true ECE and whether it holds its own estimate. For comparison the percentile interval of
the same resamples (the method robench reported before) is scored too. Runs are seeded
(`--seed`), so a rerun gives the same table. The section between the
`bench_interval_coverage` markers of the output file is replaced; the rest is kept.
"""

from __future__ import annotations

import argparse
import datetime
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from report_sections import cpu_name, load_average, write_section

from robench.results.stats.bootstrap import bootstrap
from robench.results.stats.calibration import CalibrationError

ROOT = Path(__file__).resolve().parents[1]
START = "<!-- bench_interval_coverage: start -->"
END = "<!-- bench_interval_coverage: end -->"
GOAL = 0.93  # coverage the main case must reach at nominal 95%
_ALPHA, _BETA = 4.0, 1.2  # the confidence distribution's Beta shape


@dataclass(frozen=True)
class Case:
    curve: str  # f(c) in words
    accuracy: Callable[[np.ndarray], np.ndarray]  # P(correct | confidence c)
    n: int
    main: bool = False  # the case held to GOAL


CASES = [
    Case("c^2 (overconfident)", lambda c: c**2, 1000, main=True),
    Case("c^2 (overconfident)", lambda c: c**2, 200),
    Case("c - 0.05", lambda c: c - 0.05, 1000),
    Case("c (calibrated)", lambda c: c, 1000),
]


def confidences(rng: np.random.Generator, n: int) -> np.ndarray:
    return 0.1 + 0.9 * rng.beta(_ALPHA, _BETA, size=n)


def true_ece(accuracy: Callable[[np.ndarray], np.ndarray], bins: int = 15) -> float:
    """sum_b P(b) |E[f(c) - c | b]| for the confidence density, by the midpoint rule."""
    points = 2_000_000
    x = (np.arange(points) + 0.5) / points  # Beta's support, midpoints
    log_norm = math.lgamma(_ALPHA + _BETA) - math.lgamma(_ALPHA) - math.lgamma(_BETA)
    density = np.exp(log_norm + (_ALPHA - 1) * np.log(x) + (_BETA - 1) * np.log1p(-x)) / points
    c = 0.1 + 0.9 * x
    gap = density * (accuracy(c) - c)
    which = np.clip(np.floor(c * bins), 0, bins).astype(np.intp)
    return float(np.abs(np.bincount(which, weights=gap, minlength=bins + 1)).sum())


def run_case(case: Case, runs: int, seed: int) -> dict[str, float]:
    ece = CalibrationError()
    truth = true_ece(case.accuracy)
    rng = np.random.default_rng(seed)
    held = {"centred": 0, "percentile": 0, "estimate": 0}
    started = time.perf_counter()
    for _ in range(runs):
        c = confidences(rng, case.n)
        correct = (rng.random(case.n) < case.accuracy(c)).astype(float)
        pairs = np.stack([c, correct], axis=1)
        estimate = ece(pairs)
        low, high = ece.interval(pairs)
        replicates = bootstrap(ece.of_weights, ece.gaps(pairs))
        p_low, p_high = np.percentile(replicates, [2.5, 97.5])
        held["centred"] += low <= truth <= high
        held["percentile"] += p_low <= truth <= p_high
        held["estimate"] += low <= estimate <= high
    return {
        "truth": truth,
        **{k: v / runs for k, v in held.items()},
        "seconds": time.perf_counter() - started,
    }


def section(rows: list[tuple[Case, dict[str, float]]], runs: int, seed: int) -> str:
    today = datetime.date.today().isoformat()
    lines = [
        START,
        "## ECE interval coverage by simulation (benchmarks/bench_interval_coverage.py)",
        "",
        f"{today}, {cpu_name()}, load average {load_average()} (1, 5, 15 min) at the end; "
        f"{runs} runs per case, seed {seed}; confidence 0.1 + 0.9 x Beta(4, 1.2), correct with "
        "probability f(confidence). Nominal 95%; the main case must reach "
        f"{GOAL:.0%}.",
        "",
        "| f(c) | n | true ECE (%) | robench interval covers | percentile interval covers "
        "| interval holds its estimate | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for case, found in rows:
        mark = " (main)" if case.main else ""
        lines.append(
            f"| {case.curve}{mark} | {case.n} | {100 * found['truth']:.2f} | "
            f"{100 * found['centred']:.1f}% | {100 * found['percentile']:.1f}% | "
            f"{100 * found['estimate']:.1f}% | {found['seconds']:.0f} |"
        )
    lines += [
        "",
        "robench's interval is the estimate +- 1.96 bootstrap standard errors (docs/formats.md, "
        '"Intervals"): it always holds its estimate. Plug-in ECE is biased upwards (Kumar et '
        "al. 2019), and the percentile interval of its resamples sits on the biased side twice "
        "over, which is why it misses more often where the ECE is small against its noise (f = "
        "c - 0.05: 80% against 92% for the centred interval, which also falls short of 95% "
        "there). Neither reaches the true ECE of a "
        "calibrated model (0): the estimate of n samples is positive and the interval is built "
        "around it; that row shows the limit of any interval around a plug-in ECE.",
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--main-only", action="store_true", help="only the main case")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    rows = []
    for case in [c for c in CASES if c.main or not args.main_only]:
        found = run_case(case, args.runs, args.seed)
        print(f"{case.curve} n={case.n}: {found}", flush=True)
        rows.append((case, found))
    write_section(args.output, section(rows, args.runs, args.seed), START, END)
    main_case = next(found for case, found in rows if case.main)
    if main_case["centred"] < GOAL:
        raise SystemExit(f"coverage {main_case['centred']:.3f} is under {GOAL}")


if __name__ == "__main__":
    main()
