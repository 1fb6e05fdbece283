"""The FAN part of the reproduction study (reports/reproduction.md, the paper's Table 4
"FAN" vs "FAN-Elliptical" columns), at nano scale on Fashion-MNIST.

Trains `fan_nano_4_p4_28` and `fan_nano_elliptical_4_p4_28` (FAN-ViT at 28x28: two-conv stem,
4 blocks of token mixing + attentional channel MLP, 2 class-attention blocks; Elliptical
Attention in token-mixing layers 2-4) with one recipe per seed, one CPU thread each, then
evaluates each under the `autoattack-standard` suite (AutoAttack at 1/255: APGD-CE, APGD-T,
FAB-T and Square alone, and the standard sequential worst case) on the same seeded subset of
test images, and writes a section of reports/reproduction.md with 95% intervals and paired
differences. Finished trainings and reports are reused (delete RUNS to redo them). `--ship`
copies the first seed's checkpoints to models/ with model cards.

    python benchmarks/reproduction_fan.py --runs runs/fan --seeds 0 --epochs 1 --limit 100 --ship
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from report_sections import load_average, write_section

from robench._core.version import __version__
from robench.models.checkpoints import sha256_file
from robench.results.report.schema import Report, read_report
from robench.results.stats.paired_tests import mcnemar_exact

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"baseline": "fan_nano_4_p4_28", "elliptical": "fan_nano_elliptical_4_p4_28"}
CARDS = {"baseline": "fan_nano_fmnist", "elliptical": "fan_nano_elliptical_fmnist"}
SUITE = "autoattack-standard"
START, END = "<!-- fan -->", "<!-- /fan -->"
# The paper's Table 4 (ImageNet, FAN-tiny family, eps 1/255), top-1 %: FAN, FAN-Elliptical.
PAPER = {
    "clean": (76.31, 76.38),
    "apgd-ce": (35.05, 36.13),
    "apgd-t": (35.02, 36.25),
    "fab-t": (76.35, 76.16),
    "square": (56.75, 58.38),
    "autoattack": (33.29, 34.54),
}


def train_argv(model: str, seed: int, args: argparse.Namespace, out: Path) -> list[str]:
    """The `robench train` command of one run (the shipped cards quote seed 0's)."""
    return [
        "robench", "train", model, "--epochs", f"{args.epochs:g}", "--lr", f"{args.lr:g}",
        "--batch-size", "128", "--warmup-steps", str(args.warmup_steps), "--val-limit", "2000",
        "--val-every", str(args.val_every), "--seed", str(seed), "-o", str(out),
    ]  # fmt: skip


def _robench(argv: list[str]) -> float:
    """Run `robench ARGV` on one thread (bit-exact reruns); the CPU seconds it used."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    before = os.times()
    subprocess.run([sys.executable, "-m", "robench", *argv], check=True, env=env, cwd=ROOT)
    after = os.times()
    return (after.children_user + after.children_system) - (
        before.children_user + before.children_system
    )


def _train_and_evaluate(role: str, seed: int, args: argparse.Namespace) -> tuple[Report, float]:
    """Train one model and evaluate it (both skipped when done); its report and the CPU
    seconds its training took (kept in the run folder, so a rerun still reports them)."""
    folder = args.runs / f"{role}-seed{seed}"
    cpu_file = folder / "train_cpu_seconds.txt"
    if not (folder / "best.safetensors").exists():
        seconds = _robench(train_argv(MODELS[role], seed, args, folder)[1:])
        cpu_file.write_text(f"{seconds:.1f}\n")
    report = folder / "autoattack.json"
    if not report.exists():
        _robench(
            ["eval", "-c", str(folder / "best.safetensors"), "--suite", SUITE, "--limit",
             str(args.limit), "--seed", "0", "--overwrite", "-o", str(report)]
        )  # fmt: skip
    return read_report(report), float(cpu_file.read_text()) if cpu_file.exists() else math.nan


def _top1(report: Report, result: str) -> tuple[float, tuple[float, float]]:
    value = next(r for r in report.results if r.name == result).metrics["top1"]
    return value.value, value.ci95


def _cell(report: Report, result: str) -> str:
    value, (low, high) = _top1(report, result)
    return f"{100 * value:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def _paired(base: Report, ell: Report, result: str) -> str:
    """Elliptical - baseline top-1 (pp) on the same images, exact McNemar p."""
    b = base.sample_values(result, "top1") or []
    e = ell.sample_values(result, "top1") or []
    only_base = sum(1 for x, y in zip(b, e, strict=True) if x and not y)
    only_ell = sum(1 for x, y in zip(b, e, strict=True) if y and not x)
    diff = 100 * (only_ell - only_base) / max(len(b), 1)
    return f"{diff:+.1f} ({only_base} / {only_ell}, p = {mcnemar_exact(only_base, only_ell):.2g})"


def _rows(seed: int, base: Report, ell: Report) -> list[str]:
    rows = []
    for result in (r.name for r in base.results):
        paper = PAPER.get(result)
        ref = f"{paper[0]:.2f} / {paper[1]:.2f}" if paper else ""
        rows.append(
            f"| {seed} | {result} | {_cell(base, result)} | {_cell(ell, result)} | "
            f"{_paired(base, ell, result)} | {ref} |"
        )
    return rows


def _section(
    reports: dict[int, dict[str, Report]], cpu: dict[str, float], args: argparse.Namespace
) -> str:
    seeds = sorted(reports)
    first = reports[seeds[0]]["baseline"]
    budget = ", ".join(f"{role} {seconds / 60:.1f} min" for role, seconds in cpu.items())
    lines = [
        START,
        "",
        "## FAN and FAN-Elliptical under AutoAttack (the paper's Table 4, at this scale)",
        "",
        f"Generated by `python benchmarks/reproduction_fan.py --seeds {' '.join(map(str, seeds))}"
        f" --epochs {args.epochs:g} --limit {args.limit}` on {date.today().isoformat()} (robench "
        f"{__version__}, load {load_average()}).",
        "",
        "Models: `fan_nano_4_p4_28` and `fan_nano_elliptical_4_p4_28`, FAN-ViT as NVlabs released"
        " it scaled to Fashion-MNIST (two stride-2 conv+BN stem to 7x7 tokens, Fourier "
        "positions, 4 blocks of token-mixing attention and the attentional channel MLP, 2 "
        "class-attention blocks; embed 64, 4 heads, MLP ratio 2; 245k parameters). The "
        "Elliptical twin has Elliptical Attention in token-mixing layers 2-4 and the same "
        f"parameters. Same recipe and seed for both: AdamW lr {args.lr:g}, batch 128, cosine "
        f"schedule with {args.warmup_steps} warm-up steps, label smoothing 0.1, weight decay "
        f"0.05, {args.epochs:g} epoch(s) of the 60000 training images on one CPU thread "
        f"(training CPU time: {budget}; the machine was shared, wall time was longer). "
        f"Evaluation: suite `{SUITE}` v{first.suite.version} (AutoAttack's own code, eps 1/255 "
        "in pixel units, true labels; APGD-CE, APGD-T with 9 target classes, FAB-T, Square "
        "with 5000 queries, and the standard sequential worst case) on the same "
        f"{first.data.n_samples} seeded test images for both models.",
        "",
        "Top-1 (%) with 95% Wilson intervals over images; difference: Elliptical - baseline on "
        "the same images in points (images only the baseline / only Elliptical gets right, "
        "exact McNemar p); paper: FAN / FAN-Elliptical top-1 on ImageNet (Table 4):",
        "",
        "| seed | result | baseline | elliptical | difference | paper |",
        "|---|---|---|---|---|---|",
    ]
    for seed in seeds:
        lines += _rows(seed, reports[seed]["baseline"], reports[seed]["elliptical"])
    lines += ["", END]
    return "\n".join(lines)


CARD_TEXT = """# Shipped nano FAN; written by benchmarks/reproduction_fan.py --ship.
name = "{name}"
architecture = "{architecture}"
description = "{role} nano FAN-ViT (4 FAN blocks, 64 dims, 4 heads{extra}) trained on Fashion-MNIST"
checkpoint = "{name}.safetensors"
checkpoint_sha256 = "{sha}"
dataset = "Fashion-MNIST train (60000 images); validated on 2000 seeded test images"
training_command = "OMP_NUM_THREADS=1 {command}"  # one thread: bit-exact reruns

[recipe]
optimizer = "AdamW"
lr = {lr}
batch_size = 128
epochs = {epochs}
warmup_steps = {warmup}
schedule = "cosine"
label_smoothing = 0.1
weight_decay = 0.05
clip_grad = 1.0
seed = {seed}

[metrics]  # top-1 on {n} seeded test images, suite {suite} v{suite_version}
{metrics}
"""


def ship(seed: int, reports: dict[str, Report], args: argparse.Namespace) -> None:
    """Copy seed `seed`'s checkpoints into models/ with cards quoting `reports`."""
    for role, architecture in MODELS.items():
        target = ROOT / "models" / f"{CARDS[role]}.safetensors"
        shutil.copyfile(args.runs / f"{role}-seed{seed}" / "best.safetensors", target)
        report = reports[role]
        command = train_argv(architecture, seed, args, Path(f"runs/{CARDS[role]}"))
        text = CARD_TEXT.format(
            name=CARDS[role],
            architecture=architecture,
            role=role,
            extra=", Elliptical Attention in token mixing 2-4" if role == "elliptical" else "",
            sha=sha256_file(target),
            command=shlex.join(command),
            lr=args.lr,
            epochs=float(args.epochs),
            warmup=args.warmup_steps,
            seed=seed,
            n=report.data.n_samples,
            suite=report.suite.name,
            suite_version=report.suite.version,
            metrics="\n".join(
                f"{r.name.replace('-', '_')}_top1 = {r.metrics['top1'].value:.4f}"
                for r in report.results
            ),
        )
        (ROOT / "models" / f"{CARDS[role]}.toml").write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/fan"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup-steps", type=int, default=100)
    parser.add_argument("--val-every", type=int, default=235)
    parser.add_argument("--limit", type=int, default=100, help="test images evaluated")
    parser.add_argument("--jobs", type=int, default=2, help="trainings and evaluations at once")
    parser.add_argument("--ship", action="store_true", help="copy the first seed's models")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "reproduction.md")
    args = parser.parse_args()
    args.runs.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {
            (seed, role): pool.submit(_train_and_evaluate, role, seed, args)
            for seed in args.seeds
            for role in MODELS
        }
        done = {key: future.result() for key, future in futures.items()}
    cpu = {role: done[args.seeds[0], role][1] for role in MODELS}
    reports: dict[int, dict[str, Report]] = {seed: {} for seed in args.seeds}
    for (seed, role), (report, _) in done.items():
        reports[seed][role] = report
    if args.ship:
        ship(args.seeds[0], reports[args.seeds[0]], args)
    section = _section(reports, cpu, args)
    write_section(args.out, section, START, END)
    print(section)
    print(f"done in {time.monotonic() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
