"""The Long Range Arena part of the reproduction study (reports/reproduction.md, the paper's
Table 3: ListOps and Pathfinder, baseline transformer against Elliptical Attention on the
final layer), at nano scale, with robustness the paper does not report.

It generates the data with robench's seeded generators (robench/data/lra: ListOps from its
published specification, shorter than LRA's 500-2000 tokens so that a CPU can train on it;
Pathfinder 32 x 32, difficulty curv_baseline, LRA's 80/10/10 split), trains
`lra_transformer_nano` and `lra_transformer_nano_elliptical` on each with the same recipe and
seed (`robench train`'s trainer), evaluates both on the same test sequences with the suites
`lra-tokens` (ListOps: clean and token substitution) and `lra-pixels` (Pathfinder: clean,
pixel noise, occlusion), and writes a section of reports/reproduction.md with 95% intervals
and paired differences. Finished trainings are reused: their folders are named by the data
and the recipe, so a changed option trains afresh.

The defaults are a budget at which both nano models learn ListOps on one CPU core (about a
minute of training a model). Pathfinder 32 x 32 was not learnt at any budget tried on a CPU
(2026-11-26, one thread, 8,000 or 1,600 training images, validation top-1 on 200 images):
the baseline stayed at the largest class after 300 steps of 16 at lr 2e-3, 1,500 steps of 16
at lr 1e-3 and 800 steps of 32 at lr 5e-4 (attention dropout 0, training loss at ln 2
throughout), while it memorises 64 training images in 300 steps (loss 0.008, validation
still at chance): it fits but does not generalise at this scale. The section says which
models learnt nothing, from their predictions.

    python benchmarks/reproduction_lra.py --runs runs/lra-repro --seeds 0
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from report_sections import load_average, write_section

from robench._core.version import __version__
from robench.evaluation.request import EvalRequest, evaluate
from robench.results.report.schema import Report
from robench.results.stats.paired_tests import mcnemar_exact

ROOT = Path(__file__).resolve().parents[1]
ROLES = {"baseline": "lra_transformer_nano", "elliptical": "lra_transformer_nano_elliptical"}
START, END = "<!-- lra -->", "<!-- /lra -->"


@dataclass(frozen=True)
class Task:
    name: str  # the LRA task
    suite: str  # the robustness suite it is evaluated with
    steps: int
    batch_size: int


def _generate(runs: Path, args: argparse.Namespace) -> dict[str, Path]:
    """The generated ListOps and Pathfinder folders (seed 0; made once)."""
    from robench.data.lra.generate import generate_listops, generate_pathfinder
    from robench.data.lra.listops_generator import ListOpsSpec

    listops = (
        runs
        / "data"
        / (f"listops-{args.listops_train}-{args.listops_min}-{args.listops_max}-{args.limit}")
    )
    pathfinder = runs / "data" / f"pathfinder-{args.pathfinder_images}"
    if not listops.exists():
        spec = ListOpsSpec(min_length=args.listops_min, max_length=args.listops_max)
        sizes = {"train": args.listops_train, "val": 200, "test": args.limit}
        generate_listops(listops, sizes=sizes, seed=0, spec=spec)
    if not pathfinder.exists():
        generate_pathfinder(
            pathfinder, count=args.pathfinder_images, seed=0, difficulties=("curv_baseline",)
        )
    return {"listops": listops, "pathfinder": pathfinder / "curv_baseline"}


def _train(
    runs: Path, data: Path, task: Task, role: str, seed: int, args: argparse.Namespace
) -> tuple[Path, bool]:
    """The best checkpoint of the run, and whether it was trained now (not reused)."""
    from robench.training.train_sequence import SequenceTrainConfig, train_sequence_classifier

    dataset = "-".join(data.relative_to(runs / "data").parts)  # its generator's sizes
    recipe = f"s{task.steps}-b{task.batch_size}-lr{args.lr}-ad{args.attn_dropout}"
    folder = runs / f"{dataset}-{recipe}-{role}-seed{seed}"
    best = folder / "best.safetensors"
    if not best.exists():
        config = SequenceTrainConfig(
            model=ROLES[role],
            data=str(data),
            lra_task=task.name,
            out_dir=folder,
            max_steps=task.steps,
            batch_size=task.batch_size,
            lr=args.lr,
            warmup_steps=max(1, task.steps // 10),
            val_every=max(1, task.steps // 5),
            val_limit=200,
            seed=seed,
            model_kwargs={"attn_dropout": args.attn_dropout},
            command="python benchmarks/reproduction_lra.py",
        )
        train_sequence_classifier(config)
        return best, True
    return best, False


def _evaluate(checkpoint: Path, data: Path, task: Task, role: str, limit: int) -> Report:
    request = EvalRequest(
        suite=task.suite,
        data=str(data),
        out=checkpoint.parent / f"{task.suite}.json",
        model=ROLES[role],
        checkpoint=checkpoint,
        limit=limit,
        overwrite=True,
        command=["python", "benchmarks/reproduction_lra.py"],
    )
    return evaluate(request)


def _cell(report: Report, result: str) -> str:
    value = next(r for r in report.results if r.name == result).metrics["top1"]
    low, high = value.ci95
    return f"{100 * value.value:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def _paired(base: Report, ell: Report, result: str) -> str:
    """Elliptical - baseline top-1 (pp) on the same sequences, exact McNemar p."""
    b = base.sample_values(result, "top1") or []
    e = ell.sample_values(result, "top1") or []
    only_base = sum(1 for x, y in zip(b, e, strict=True) if x and not y)
    only_ell = sum(1 for x, y in zip(b, e, strict=True) if y and not x)
    diff = 100 * (only_ell - only_base) / max(len(b), 1)
    return f"{diff:+.1f} (p = {mcnemar_exact(only_base, only_ell):.2g})"


def _top1(report: Report, result: str) -> float:
    return next(r for r in report.results if r.name == result).metrics["top1"].value


def _constant_predictors(
    reports: dict[tuple[str, int], dict[str, Report]], tasks: list[Task]
) -> list[str]:
    """A sentence naming every model that predicts one class for all its clean test
    sequences (it has learnt nothing the data's labels could show), and the majority share."""
    found = []
    for (task_name, seed), pair in sorted(reports.items()):
        for role, report in pair.items():
            samples = report.samples["default"]
            predicted = set(samples.values["clean"]["prediction"])
            if len(predicted) == 1:
                targets = samples.targets
                share = max(targets.count(t) for t in set(targets)) / len(targets)
                found.append(
                    f"{role} {task_name} (seed {seed}) predicts class {predicted.pop()} for every "
                    f"test sequence (the largest class is {100 * share:.1f}% of them)"
                )
    if not found:
        return []
    return [
        "**Constant predictors at this budget:** " + "; ".join(found) + ". Their rows "
        "measure the label distribution, not the models: no claim of Table 3 is tested by them.",
        "",
    ]


def _not_above_chance(
    reports: dict[tuple[str, int], dict[str, Report]], tasks: list[Task]
) -> list[str]:
    """A sentence naming every model that predicts more than one class but whose clean top-1
    interval does not rise above the largest class's share: it has not shown learning."""
    found = []
    for (task_name, seed), pair in sorted(reports.items()):
        for role, report in pair.items():
            samples = report.samples["default"]
            if len(set(samples.values["clean"]["prediction"])) == 1:
                continue  # named by _constant_predictors
            targets = samples.targets
            share = max(targets.count(t) for t in set(targets)) / len(targets)
            clean = next(r for r in report.results if r.name == "clean").metrics["top1"]
            if clean.ci95[0] <= share:
                found.append(
                    f"{role} {task_name} (seed {seed}) scores {100 * clean.value:.1f}%, its "
                    f"interval reaching down to the largest class's {100 * share:.1f}%"
                )
    if not found:
        return []
    return [
        "**Not above the largest class:** " + "; ".join(found) + ". These rows do not show "
        "that the model learnt the task.",
        "",
    ]


def _learnt(reports: dict[tuple[str, int], dict[str, Report]], task_name: str) -> bool:
    """Whether every model of the task beats its largest class (clean interval above it)."""
    for (name, _), pair in reports.items():
        if name != task_name:
            continue
        for report in pair.values():
            targets = report.samples["default"].targets
            share = max(targets.count(t) for t in set(targets)) / len(targets)
            clean = next(r for r in report.results if r.name == "clean").metrics["top1"]
            if clean.ci95[0] <= share:
                return False
    return True


def _command(args: argparse.Namespace) -> str:
    """The exact command line that regenerates the section (every recipe option spelt out)."""
    return (
        f"python benchmarks/reproduction_lra.py --seeds {' '.join(map(str, args.seeds))} "
        f"--listops-steps {args.listops_steps} --listops-train {args.listops_train} "
        f"--pathfinder-steps {args.pathfinder_steps} --pathfinder-images "
        f"{args.pathfinder_images} --lr {args.lr} --attn-dropout {args.attn_dropout} "
        f"--limit {args.limit}"
    )


def _protocol(tasks: list[Task], args: argparse.Namespace) -> list[str]:
    steps = ", ".join(f"{t.name} {t.steps} steps of {t.batch_size}" for t in tasks)
    return [
        "Protocol: `lra_transformer_nano` (2 pre-norm layers of width 32, 2 heads of 16, "
        "feed-forward 64, learned positions, mean pooling; the paper's LRA model at half its "
        "width 64) and `lra_transformer_nano_elliptical` (the same with Elliptical Attention "
        "on the final layer, fed by the first layer's values) are trained with the same recipe "
        f"and seed ({steps}; AdamW, lr {args.lr}, no weight decay, 10% warm-up and cosine "
        f"decay, dropout 0.1, attention dropout {args.attn_dropout}; validation top-1 on 200 "
        "validation sequences every fifth of the run, the best checkpoint kept). Data from "
        "robench's seeded generators: ListOps as LRA configures it (MAX, MIN, MED, SUM_MOD, at "
        f"most 10 arguments, depth at most 10) but {args.listops_min + 1} to "
        f"{args.listops_max - 1} tokens instead of 501 to 1999, {args.listops_train} training "
        f"expressions; Pathfinder 32 x 32 curv_baseline, {args.pathfinder_images} images split "
        "80/10/10. Evaluated on the same test sequences for both models, clean and under the "
        "suites `lra-tokens` (ListOps: 1%, 5%, 10% of the tokens substituted) and "
        "`lra-pixels` (Pathfinder: Gaussian pixel noise, 4 x 4 and 8 x 8 occlusion), every "
        "perturbation seeded per sample.",
        "",
    ]


def _caveats(
    reports: dict[tuple[str, int], dict[str, Report]], tasks: list[Task], run: dict[str, str]
) -> list[str]:
    budget = " and ".join(f"{t.steps} {t.name} steps of {t.batch_size}" for t in tasks)
    pathfinder = (
        "- **Pathfinder is learnt.** Every Pathfinder model beats its largest class."
        if _learnt(reports, "pathfinder")
        else "- **Pathfinder is not learnt at this budget.** A Pathfinder model's clean top-1 "
        "does not rise above its largest class, so its rows say nothing about Elliptical "
        "Attention; the other budgets tried on a CPU (benchmarks/reproduction_lra.py's "
        "docstring lists them) did not learn it either. LRA trains 62,400 steps of 256 images."
    )
    return [
        "### Caveats",
        "",
        f"- **Scale.** {budget} per model on {run['threads']} CPU thread(s), not the LRA "
        "schedule (5,000 ListOps steps and 62,400 Pathfinder steps of 32 and 256 sequences); "
        "a model at its largest class has learnt nothing, and "
        "then neither its clean accuracy nor its robustness says anything about Elliptical "
        "Attention.",
        "- **Attention dropout.** Set to "
        f"{run['attn_dropout']} instead of the shipped models' 0.1, for both models alike: "
        "with dropout on the attention probabilities PyTorch's CPU attention falls back to its "
        "unfused path, about six times slower at Pathfinder's 1,024 tokens.",
        pathfinder,
        f"- **A shared machine.** Load {run['load_start']} at the start and {run['load_end']} "
        "at the end (1, 5, 15 minutes) on a CPU shared with other jobs: the times are this "
        "machine's under that load; the accuracies are seeded and do not depend on it.",
        "- **Shorter ListOps.** The expressions are a quarter to a tenth of LRA's length, so "
        "this tests the operators and nesting, not the long range.",
        "- **Intervals.** Each test set is a few hundred sequences: differences inside the "
        "intervals (and McNemar p above 0.05) are not evidence either way.",
        "- **Robustness is new.** The paper reports no perturbed LRA accuracy; the "
        "substitution, noise and occlusion rows have no reference numbers.",
        "",
    ]


def _table(reports: dict[tuple[str, int], dict[str, Report]], tasks: list[Task]) -> list[str]:
    lines = [
        "Top-1 (%) with 95% Wilson intervals; difference: Elliptical - baseline on the same "
        "sequences, percentage points, exact McNemar p:",
        "",
        "| seed | task | result | baseline | elliptical | difference |",
        "|---|---|---|---|---|---|",
    ]
    for task in tasks:
        for seed in sorted({seed for _, seed in reports}):
            pair = reports[(task.name, seed)]
            base, ell = pair["baseline"], pair["elliptical"]
            for result in (r.name for r in base.results):
                lines.append(
                    f"| {seed} | {task.name} | {result} | {_cell(base, result)} | "
                    f"{_cell(ell, result)} | {_paired(base, ell, result)} |"
                )
    return [*lines, ""]


def _section(
    reports: dict[tuple[str, int], dict[str, Report]],
    tasks: list[Task],
    args: argparse.Namespace,
    run: dict[str, str],
) -> str:
    seeds = sorted({seed for _, seed in reports})
    means = {
        (task.name, role): 100
        * statistics.fmean(_top1(reports[(task.name, s)][role], "clean") for s in seeds)
        for task in tasks
        for role in ROLES
    }
    lines = [
        START,
        "",
        "## Long Range Arena: ListOps and Pathfinder (the paper's Table 3, at this scale)",
        "",
        f"Generated by `{_command(args)}` on {date.today().isoformat()} (robench "
        f"{__version__}, CPU, {run['threads']} thread(s); {run['wall']} wall and {run['cpu']} "
        f"CPU for the {run['trained']} trainings and all evaluations, {run['reused']} "
        "trainings reused).",
        "",
        *_protocol(tasks, args),
        *_table(reports, tasks),
        *_constant_predictors(reports, tasks),
        *_not_above_chance(reports, tasks),
        f"Mean clean top-1 over {len(seeds)} seed(s): ListOps "
        f"{means[('listops', 'baseline')]:.1f}% (baseline) vs "
        f"{means[('listops', 'elliptical')]:.1f}% (Elliptical); Pathfinder "
        f"{means[('pathfinder', 'baseline')]:.1f}% vs "
        f"{means[('pathfinder', 'elliptical')]:.1f}%. "
        "The paper reports ListOps 37.1 vs 37.8 and Pathfinder 74.2 vs 73.2 (Table 3, full "
        "LRA, 5 runs).",
        "",
        *_caveats(reports, tasks, run),
        END,
    ]
    return "\n".join(lines)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/lra-repro"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--listops-steps", type=int, default=1000)
    parser.add_argument("--pathfinder-steps", type=int, default=1000)
    parser.add_argument("--listops-train", type=int, default=20000)
    parser.add_argument("--listops-min", type=int, default=30)
    parser.add_argument("--listops-max", type=int, default=150)
    parser.add_argument("--pathfinder-images", type=int, default=10000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument(
        "--attn-dropout",
        type=float,
        default=0.0,
        help="dropout on the attention probabilities (the shipped models' 0.1 makes CPU "
        "attention about six times slower)",
    )
    parser.add_argument("--limit", type=int, default=200, help="test sequences evaluated")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "reproduction.md")
    args = parser.parse_args()
    import torch

    run = {"load_start": load_average(), "threads": str(torch.get_num_threads())}
    run["attn_dropout"] = str(args.attn_dropout)
    wall, cpu = time.perf_counter(), time.process_time()
    data = _generate(args.runs, args)
    tasks = [
        Task("listops", "lra-tokens", args.listops_steps, 32),
        Task("pathfinder", "lra-pixels", args.pathfinder_steps, 16),
    ]
    reports: dict[tuple[str, int], dict[str, Report]] = {}
    reused = 0
    for task in tasks:
        for seed in args.seeds:
            for role in ROLES:
                best, trained = _train(args.runs, data[task.name], task, role, seed, args)
                reused += not trained
                report = _evaluate(best, data[task.name], task, role, args.limit)
                reports.setdefault((task.name, seed), {})[role] = report
    run |= {
        "wall": _minutes(time.perf_counter() - wall),
        "cpu": _minutes(time.process_time() - cpu),
        "trained": str(len(reports) * len(ROLES) - reused),
        "reused": str(reused),
        "load_end": load_average(),
    }
    write_section(args.out, _section(reports, tasks, args, run), START, END)
    print(f"wrote the LRA section of {args.out}")


if __name__ == "__main__":
    main()
