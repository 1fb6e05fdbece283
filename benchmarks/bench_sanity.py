"""Sanity battery budget: the default battery (`auto`) and the full one against their suite.

Run from the repository root:

    .venv/bin/python benchmarks/bench_sanity.py            # updates reports/benchmarks.md
    .venv/bin/python benchmarks/bench_sanity.py --rounds 1 --output /tmp/s.md

The suite is clean + FGSM (L-inf 8/255) on 20 Fashion-MNIST test images (robench's seeded
subset), batch 64, evaluated by `robench.evaluation.request.evaluate` with the battery at
`--sanity-budget auto` (the default) and at `full`, for two models: the shipped
`vit_nano_fmnist`, and timm's `resnet18` at 28x28 grayscale (in_chans 1, 10 classes) with
random weights (`--allow-random-weights`: its accuracies mean nothing, only the cost is
measured). After one untimed warm-up of each model, `auto` runs `--rounds` times and `full`
once. Reported per model and budget: the battery's samples and estimated model passes against
the suite's (the report's `sanity_budget`), the suite's wall time (its results' `wall_time_s`
summed: the runner's batch loops), the battery's (`sanity_budget.wall_time_s`) and the ratio
battery / suite of each. The section between the `bench_sanity` markers of the output file is
replaced, or appended when absent.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import tempfile
from pathlib import Path
from typing import Any

import torch
from report_sections import cpu_name, load_average, write_section

from robench.evaluation.request import EvalRequest, evaluate
from robench.models.spec import ModelSpec

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench_sanity -->", "<!-- /bench_sanity -->"
SUITE = """name = "clean-fgsm"
version = 1

[[perturbations]]
kind = "clean"

[[perturbations]]
kind = "fgsm"
eps = "8/255"
"""
# Model name -> what `evaluate` needs besides the model name.
MODELS: dict[str, dict[str, Any]] = {
    "vit_nano_fmnist": {},
    "resnet18": {
        "allow_random_weights": True,
        "overrides": ModelSpec(
            num_classes=10,
            input_size=(1, 28, 28),
            mean=(0.286,),
            std=(0.353,),
            model_kwargs={"in_chans": 1},
        ),
    },
}
LIMIT, BATCH = 20, 64


def _run(model: str, budget: str, work: Path) -> dict[str, float]:
    (work / "suite.toml").write_text(SUITE)
    report = evaluate(
        EvalRequest(
            suite=str(work / "suite.toml"),
            data="fashion-mnist",
            out=work / f"{model}-{budget}.json",
            model=model,
            limit=LIMIT,
            batch_size=BATCH,
            sanity=True,
            sanity_budget=budget,
            overwrite=True,
            **MODELS[model],
        )
    )
    info = report.sanity_budget
    assert info is not None
    return {
        "samples": info.samples,
        "battery_passes": info.battery_passes,
        "suite_passes": info.suite_passes,
        "suite_s": sum(r.wall_time_s for r in report.results),
        "battery_s": info.wall_time_s,
        # The rest of `robench eval`: model and data loading, checks, the suite, the report.
        "eval_s": report.wall_time_s - info.wall_time_s,
    }


def measure(model: str, rounds: int, work: Path) -> dict[str, dict[str, float]]:
    _run(model, "auto", work)  # warm-up: imports, first calls
    out = {}
    for budget, n in (("auto", rounds), ("full", 1)):
        runs = [_run(model, budget, work) for _ in range(n)]
        out[budget] = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        print(model, budget, out[budget], flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the auto battery")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "benchmarks.md")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    started, before = datetime.datetime.now(datetime.timezone.utc), load_average()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in MODELS:
            results[model] = measure(model, args.rounds, Path(tmp))
    lines = [
        START,
        "## Sanity battery budget: the battery vs the suite it checks (benchmarks/bench_sanity.py)",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC",
        f"- machine: {cpu_name()}; torch {torch.__version__}, threads {torch.get_num_threads()}",
        f"- load average (1, 5, 15 min) before: {before}; after: {load_average()}",
        f"- command: `python benchmarks/bench_sanity.py --rounds {args.rounds}`; suite clean + "
        f"FGSM 8/255 on {LIMIT} Fashion-MNIST test images (seeded subset), batch {BATCH}; "
        f"`auto` median of {args.rounds} rounds, `full` one round, after a warm-up",
        "",
        "| model | budget | battery samples | passes battery / suite (estimated) | ratio "
        "| suite s | battery s | wall ratio battery / suite | eval without battery s "
        "| wall ratio battery / eval |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for model, by_budget in results.items():
        for budget, r in by_budget.items():
            lines.append(
                f"| {model} | {budget} | {r['samples']:.0f} | "
                f"{r['battery_passes']:.0f} / {r['suite_passes']:.0f} | "
                f"{r['battery_passes'] / r['suite_passes']:.2f} | {r['suite_s']:.2f} | "
                f"{r['battery_s']:.2f} | {r['battery_s'] / r['suite_s']:.2f} | "
                f"{r['eval_s']:.2f} | {r['battery_s'] / r['eval_s']:.2f} |"
            )
    lines += [
        "",
        "`resnet18` has random weights (`--allow-random-weights`, in_chans 1, 10 classes): only "
        "the cost is measured, its accuracies and verdicts mean nothing. `auto` keeps the "
        "battery's estimated model passes (a forward 1, a forward and backward 3; "
        "docs/sanity.md) within 3x the suite's; wall time also pays per call, and the battery "
        "makes more, smaller calls (few samples, one batch per attack run) than the suite, so "
        "its wall ratio can exceed its pass ratio. The suite's seconds are its batch loops "
        "(the results' `wall_time_s`), the battery's its whole run (`sanity_budget.wall_time_s`). "
        '"Eval without battery" is the rest of the same `evaluate` call (the report\'s '
        "`wall_time_s` minus the battery's): loading the model and data, the model checks, the "
        "suite and the report, what `robench eval` costs without `--sanity` (less Python's "
        "start-up).",
        END,
    ]
    section = "\n".join(lines)
    print(section)
    write_section(args.output, section, START, END)


if __name__ == "__main__":
    main()
