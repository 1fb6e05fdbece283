"""Small-scale reproduction of the Elliptical Attention paper's claims on Fashion-MNIST.

Trains the baseline and the elliptical nano ViT with the same recipe for several seeds,
evaluates each with the `reproduction-fmnist` suite (FGSM, PGD, SPSA, AutoAttack, adaptive PGD
through M, collapse, head redundancy, efficiency), and writes `reports/reproduction.md` with
means and 95% t-intervals over seeds. Re-running skips finished trainings and reports.

    python benchmarks/reproduction.py --seeds 0 1 2 --epochs 5
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import torch

import robench
from robench.models.checkpoints import sha256_file
from robench.results.report.schema import Report, read_report

MODELS = {"baseline": "vit_nano_patch4_28", "elliptical": "vit_nano_elliptical_patch4_28"}
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306}


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval (0 for a single value)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, 0.0
    half = T_975[len(values) - 1] * statistics.stdev(values) / math.sqrt(len(values))
    return mean, half


def train_argv(model: str, seed: int, args: argparse.Namespace, out_dir: Path) -> list[str]:
    """The `robench train` command of one run (the shipped model cards quote seed 0's)."""
    return [
        "robench",
        "train",
        model,
        "--epochs",
        f"{args.epochs:g}",
        "--lr",
        f"{args.lr:g}",
        "--batch-size",
        "128",
        "--warmup-steps",
        "200",
        "--val-limit",
        "2000",
        "--val-every",
        "500",
        "--seed",
        str(seed),
        "-o",
        str(out_dir),
    ]


def eval_argv(checkpoint: Path, report: Path, args: argparse.Namespace) -> list[str]:
    return [
        "robench",
        "eval",
        "-c",
        str(checkpoint),
        "--suite",
        "reproduction-fmnist",
        "--limit",
        str(args.limit),
        "--batch-size",
        "250",
        "--seed",
        "0",
        "--overwrite",
        "-o",
        str(report),
        "--format",
        "markdown",
    ]


def _run_parallel(commands: list[list[str]], jobs: int) -> None:
    """Run commands `jobs` at a time, one CPU thread each (no OpenMP oversubscription)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    robench_bin = str(Path(sys.executable).with_name("robench"))
    pending = list(commands)
    running: list[subprocess.Popen[bytes]] = []
    while pending or running:
        while pending and len(running) < jobs:
            argv = pending.pop(0)
            logging.info("running %s", shlex.join(argv))
            running.append(subprocess.Popen([robench_bin, *argv[1:]], env=env))
        for proc in list(running):
            if proc.poll() is not None:
                running.remove(proc)
                if proc.returncode != 0:
                    raise SystemExit(
                        f"{shlex.join(map(str, proc.args))} failed ({proc.returncode})"
                    )
        time.sleep(1)


def run(args: argparse.Namespace) -> dict[str, list[Report]]:
    runs = [
        (short, model, seed, args.work_dir / f"{short}-seed{seed}")
        for seed in args.seeds
        for short, model in MODELS.items()
    ]
    _run_parallel(
        [
            train_argv(model, seed, args, d)
            for _, model, seed, d in runs
            if not (d / "best.safetensors").exists()
        ],
        args.jobs,
    )
    _run_parallel(
        [
            eval_argv(d / "best.safetensors", d / "reproduction.json", args)
            for _, _, _, d in runs
            if not (d / "reproduction.json").exists()
        ],
        args.jobs,
    )
    reports: dict[str, list[Report]] = {name: [] for name in MODELS}
    for short, _, _, run_dir in runs:
        reports[short].append(read_report(run_dir / "reproduction.json"))
    return reports


def _accuracy(report: Report, name: str) -> float:
    return next(r for r in report.results if r.name == name).metrics["top1"].value


def _diag(report: Report, name: str, key: str) -> float:
    values = next(d for d in report.diagnostics if d.name == name).values
    return float(values["per_layer"][-1] if key == "last" else values[key])


def _fmt(values: list[float], scale: float = 100.0, digits: int = 2) -> str:
    mean, half = mean_ci([v * scale for v in values])
    return f"{mean:.{digits}f} ± {half:.{digits}f}"


def write_markdown(reports: dict[str, list[Report]], path: Path, args: argparse.Namespace) -> str:
    first = reports["baseline"][0]
    names = [r.name for r in first.results]
    lines = [
        "# Reproduction study: Elliptical Attention on Fashion-MNIST",
        "",
        f"Generated by `python benchmarks/reproduction.py --seeds {' '.join(map(str, args.seeds))}"
        f" --epochs {args.epochs}` on {date.today().isoformat()} (robench {robench.__version__},"
        f" torch {torch.__version__}, {torch.get_num_threads()} CPU threads).",
        "",
        f"Models: `vit_nano_patch4_28` (baseline) and `vit_nano_elliptical_patch4_28` (Elliptical"
        f" Attention in layers 2-4), identical recipes: AdamW lr {args.lr}, batch 128, cosine"
        f" schedule with 200 warm-up steps, label smoothing 0.1, weight decay 0.05, {args.epochs}"
        f" epochs on the full training set; seeds {args.seeds}. Evaluation: {first.data.n_samples}"
        " test images (seeded subset), suite `reproduction-fmnist` v"
        f"{first.suite.version}: attacks in pixel units with true labels; SPSA (5 steps,"
        " 32 directions) on the first 100 and AutoAttack (standard; 3 target classes for"
        " APGD-T and FAB-T, Square with 500 queries) on the first 100 of those images.",
        "",
        f"Top-1 accuracy (%), mean ± 95% t-interval over {len(args.seeds)} seeds:",
        "",
        "| attack | " + " | ".join(MODELS) + " | difference (ell. - base) |",
        "|---|---|---|---|",
    ]
    for name in names:
        base = [_accuracy(r, name) for r in reports["baseline"]]
        ell = [_accuracy(r, name) for r in reports["elliptical"]]
        diff = [e - b for e, b in zip(ell, base, strict=True)]
        lines.append(f"| {name} | {_fmt(base)} | {_fmt(ell)} | {_fmt(diff)} |")
    lines += ["", "Diagnostics (mean ± 95% t-interval over seeds):", ""]
    lines += ["| diagnostic | baseline | elliptical |", "|---|---|---|"]
    rows = [
        ("collapse: mean token cosine similarity, last layer", "collapse", "last", 1.0, 4),
        ("collapse: mean over layers", "collapse", "mean", 1.0, 4),
        ("head redundancy: mean L2 distance between heads", "head_redundancy", "mean", 1.0, 4),
        ("GFLOPs per sample", "efficiency", "gflops_per_sample", 1.0, 5),
        ("forward activation peak (MiB, batch 64)", "efficiency", "peak_memory_mb", 1.0, 2),
    ]
    for label, diag, key, scale, digits in rows:
        cells = []
        for short in MODELS:
            try:
                values = [_diag(r, diag, key) for r in reports[short]]
            except (KeyError, StopIteration):
                values = []
            cells.append(_fmt(values, scale, digits) if values else "n/a")
        lines.append(f"| {label} | {' | '.join(cells)} |")
    lines += [
        "",
        "Throughput is not compared here: the runs share 2 cores in parallel processes. Time and",
        "memory overheads are measured side by side in `reports/benchmarks.md`.",
    ]
    text = "\n".join(lines) + "\n"
    path.write_text(text + path_suffix(path))
    return text


def path_suffix(path: Path) -> str:
    """Keep a hand-written conclusions section (below the marker) across regenerations."""
    marker = "<!-- conclusions -->"
    if path.exists() and marker in path.read_text():
        return "\n" + marker + path.read_text().split(marker, 1)[1]
    return f"\n{marker}\n\n## Which claims hold at this scale\n\n(to be written after a run)\n"


CARDS = {"baseline": "vit_nano_fmnist", "elliptical": "vit_nano_elliptical_fmnist"}
CARD_TEXT = """# Shipped for the demo and tests; written by benchmarks/reproduction.py --ship.
name = "{name}"
architecture = "{architecture}"
description = "{description}"
checkpoint = "{name}.safetensors"
checkpoint_sha256 = "{sha}"
dataset = "Fashion-MNIST train (60000 images); validated on 2000 seeded test images"
training_command = "OMP_NUM_THREADS=1 {command}"  # one thread: bit-exact reruns

[recipe]
optimizer = "AdamW"
lr = {lr}
batch_size = 128
epochs = {epochs}
warmup_steps = 200
schedule = "cosine"
label_smoothing = 0.1
weight_decay = 0.05
clip_grad = 1.0
seed = {seed}

[metrics]  # top-1 on {n} seeded test images, suite {suite} v{suite_version}
{metrics}
"""


def ship(args: argparse.Namespace, reports: dict[str, list[Report]]) -> None:
    """Copy seed `args.seeds[0]`'s checkpoints into models/ with cards quoting `reports`."""
    seed = args.seeds[0]
    models_dir = Path(__file__).resolve().parents[1] / "models"
    for short, architecture in MODELS.items():
        run_dir = args.work_dir / f"{short}-seed{seed}"
        target = models_dir / f"{CARDS[short]}.safetensors"
        shutil.copyfile(run_dir / "best.safetensors", target)
        report = reports[short][0]
        text = CARD_TEXT.format(
            name=CARDS[short],
            architecture=architecture,
            description=f"{short} nano ViT (4 layers, 64 dims, 4 heads) trained on Fashion-MNIST",
            sha=sha256_file(target),
            command=shlex.join(train_argv(architecture, seed, args, Path(f"runs/{CARDS[short]}"))),
            lr=args.lr,
            epochs=args.epochs,
            seed=seed,
            n=report.data.n_samples,
            suite=report.suite.name,
            suite_version=report.suite.version,
            metrics="\n".join(
                f"{r.name.replace('-', '_')}_top1 = {r.metrics['top1'].value:.4f}"
                for r in report.results
            ),
        )
        (models_dir / f"{CARDS[short]}.toml").write_text(text)
        logging.info("shipped %s (%s)", target, sha256_file(target)[:12])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=float, default=5.0)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--ship", action="store_true", help="copy the first seed's models")
    parser.add_argument("--jobs", type=int, default=2, help="processes at a time")
    parser.add_argument("--work-dir", type=Path, default=Path("runs/reproduction"))
    parser.add_argument("--output", type=Path, default=Path("reports/reproduction.md"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    reports = run(args)
    if args.ship:
        ship(args, reports)
    print(write_markdown(reports, args.output, args))


if __name__ == "__main__":
    main()
