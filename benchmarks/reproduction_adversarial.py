"""The adversarial-training part of the reproduction study (reports/reproduction.md, issue
46): the shipped nano ViT pair, baseline and Elliptical, fine-tuned by PGD adversarial training
(Madry et al. 2018) at L-inf eps 0.1 and evaluated under AutoAttack standard at that eps
against their standard-trained twins.

Fine-tunes the shipped `vit_nano_fmnist` and `vit_nano_elliptical_fmnist` with one recipe
(`robench train CARD --adversarial pgd --eps 0.1 --steps 5`, one CPU thread each, both at
once), then evaluates the four models (two PGD-AT, two standard) under the
`autoattack-fmnist-0.1` suite (clean, PGD-20, APGD-CE alone, AutoAttack standard) on the same
seeded test images, and writes a section of reports/reproduction.md with 95% intervals and
paired differences (exact McNemar). Finished trainings and reports are reused (delete RUNS to
redo them). `--verify` retrains the baseline into RUNS-rerun and checks that its weights equal
the first run's bit for bit; `--ship` copies the checkpoints to models/ with model cards.

    python benchmarks/reproduction_adversarial.py --limit 200 --verify --ship
"""

from __future__ import annotations

import argparse
import concurrent.futures
import shlex
import shutil
from datetime import date
from pathlib import Path

import torch
from report_sections import load_average, write_section
from reproduction_common import paired_difference, robench_one_thread
from safetensors.torch import load_file

from robench._core.version import __version__
from robench.models.checkpoints import sha256_file
from robench.results.report.schema import Report, read_report

ROOT = Path(__file__).resolve().parents[1]
# Role -> (the shipped standard-trained card fine-tuned, the card shipped after PGD-AT).
CARDS = {
    "baseline": ("vit_nano_fmnist", "vit_nano_pgd_fmnist"),
    "elliptical": ("vit_nano_elliptical_fmnist", "vit_nano_elliptical_pgd_fmnist"),
}
ARCHITECTURES = {"baseline": "vit_nano_patch4_28", "elliptical": "vit_nano_elliptical_patch4_28"}
SUITE = "attacks/autoattack-fmnist-0.1.toml"
RESULTS = ("clean", "pgd-20", "apgd-ce", "autoattack")  # the suite's, in table order
START, END = "<!-- adversarial-training -->", "<!-- /adversarial-training -->"


def train_argv(card: str, args: argparse.Namespace, out: Path) -> list[str]:
    """The `robench train` command of one run (the shipped cards quote it)."""
    return [
        "robench", "train", card, "--adversarial", "pgd", "--eps", f"{args.eps:g}", "--steps",
        str(args.attack_steps), "--max-steps", str(args.steps), "--batch-size", "128", "--lr",
        f"{args.lr:g}", "--warmup-steps", str(args.steps // 10), "--val-limit", "500",
        "--val-every", "50", "--seed", "0", "-o", str(out),
    ]  # fmt: skip


def _evaluate(model: list[str], report: Path, limit: int) -> Report:
    """`robench eval MODEL` (a card's name, or `-c CHECKPOINT`) under the suite on `limit`
    seeded test images (reused when done)."""
    if not report.exists():
        report.parent.mkdir(parents=True, exist_ok=True)
        robench_one_thread(
            ["eval", *model, "--suite", SUITE, "--limit", str(limit), "--seed", "0",
             "--overwrite", "-o", str(report)]
        )  # fmt: skip
    return read_report(report)


def _train_and_evaluate(role: str, args: argparse.Namespace) -> dict[str, Report]:
    """Adversarially fine-tune one model, then evaluate it and its standard-trained twin."""
    folder = args.runs / role
    if not (folder / "best.safetensors").exists():
        robench_one_thread(train_argv(CARDS[role][0], args, folder)[1:])
    name = f"autoattack-{args.limit}.json"
    return {
        "pgd-at": _evaluate(["-c", str(folder / "best.safetensors")], folder / name, args.limit),
        "standard": _evaluate([CARDS[role][0]], args.runs / f"standard-{role}" / name, args.limit),
    }


def _rerun_folder(args: argparse.Namespace) -> Path:
    return args.runs.with_name(args.runs.name + "-rerun") / "baseline"


def rerun_baseline(args: argparse.Namespace) -> float | None:
    """Retrain the baseline into RUNS-rerun (unless there already): its CPU seconds."""
    folder = _rerun_folder(args)
    if (folder / "best.safetensors").exists():
        return None
    return robench_one_thread(train_argv(CARDS["baseline"][0], args, folder)[1:])


def same_weights(first: Path, again: Path) -> bool:
    """Whether two checkpoints hold the same tensors bit for bit (their metadata, which
    quotes each run's output folder, may differ)."""
    a, b = load_file(str(first)), load_file(str(again))
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _top1(report: Report, result: str) -> tuple[float, tuple[float, float]]:
    value = next(r for r in report.results if r.name == result).metrics["top1"]
    return value.value, value.ci95


def _cell(report: Report, result: str) -> str:
    value, (low, high) = _top1(report, result)
    return f"{100 * value:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def _correct(report: Report, result: str) -> list[bool]:
    return [bool(v) for v in report.sample_values(result, "top1") or []]


def _wall(report: Report, result: str) -> str:
    return f"{next(r for r in report.results if r.name == result).wall_time_s:.0f}"


LABELS = {"baseline": "baseline", "elliptical": "Elliptical"}


def _result_rows(reports: dict[str, dict[str, Report]]) -> list[str]:
    """One row per model and attack: top-1 with its interval and the wall time (columns for
    the attack's cost can be added at the right)."""
    rows = []
    for role in CARDS:
        for training in ("standard", "pgd-at"):
            report = reports[role][training]
            model = CARDS[role][1 if training == "pgd-at" else 0]
            for result in RESULTS:
                rows.append(
                    f"| `{model}` | {LABELS[role]} | {training} | {result} | "
                    f"{_cell(report, result)} | {_wall(report, result)} |"
                )
    return rows


def _difference_rows(reports: dict[str, dict[str, Report]]) -> list[str]:
    """Per attack: PGD-AT - standard for each architecture, and Elliptical - baseline between
    the PGD-AT models, all on the same images with exact McNemar p."""
    rows = []
    for result in RESULTS:
        gains = [
            paired_difference(
                _correct(reports[role]["standard"], result),
                _correct(reports[role]["pgd-at"], result),
            )
            for role in CARDS
        ]
        elliptical = paired_difference(
            _correct(reports["baseline"]["pgd-at"], result),
            _correct(reports["elliptical"]["pgd-at"], result),
        )
        rows.append(f"| {result} | {gains[0]} | {gains[1]} | {elliptical} |")
    return rows


def _acceptance(reports: dict[str, dict[str, Report]]) -> str:
    """Issue 46's target, checked: under AutoAttack each PGD-AT model keeps at least 30% and
    at least 20 points more than its standard-trained twin."""
    parts = []
    for role in CARDS:
        robust = _top1(reports[role]["pgd-at"], "autoattack")[0]
        twin = _top1(reports[role]["standard"], "autoattack")[0]
        met = robust >= 0.3 and robust - twin >= 0.2
        parts.append(
            f"{LABELS[role]} {100 * robust:.1f}% against {100 * twin:.1f}% "
            f"({'met' if met else 'NOT met'})"
        )
    return (
        "Target (issue 46: AutoAttack top-1 at least 30% and at least 20 points above the "
        f"standard-trained twin): {'; '.join(parts)}."
    )


def _wall_minutes(reports: dict[str, dict[str, Report]]) -> str:
    """Each evaluation's wall time, the PGD-AT models' then their twins'."""
    return ", ".join(
        f"`{CARDS[role][1 if training == 'pgd-at' else 0]}` "
        f"{reports[role][training].wall_time_s / 60:.0f}"
        for role in CARDS
        for training in ("pgd-at", "standard")
    )


def _section(
    reports: dict[str, dict[str, Report]],
    args: argparse.Namespace,
    rerun: tuple[bool, float | None] | None,
) -> str:
    first = reports["baseline"]["pgd-at"]
    hashes = {r.data.indices_sha256 for pair in reports.values() for r in pair.values()}
    same = "the same" if len(hashes) == 1 else "NOT the same (check indices_sha256)"
    command = f"python benchmarks/reproduction_adversarial.py --limit {args.limit}" + (
        " --verify" if args.verify else ""
    )
    if rerun is None:
        rerun_note = "The rerun check (`--verify`) was not run."
    else:
        spent = "" if rerun[1] is None else f" ({rerun[1] / 60:.0f} CPU minutes)"
        verdict = "equal" if rerun[0] else "NOT equal"
        rerun_note = (
            f"A rerun of the baseline's training{spent} gave weights {verdict} bit for bit "
            "to the first run's (`--verify`, every tensor compared)."
        )
    lines = [
        START,
        "",
        "## Adversarial training: PGD-AT nano ViTs under AutoAttack (issue 46)",
        "",
        f"Generated by `{command}` on {date.today().isoformat()} (robench {__version__}, one "
        f"CPU thread per run, load {load_average()}; minutes of wall time per evaluation, "
        f"shared machine: {_wall_minutes(reports)}).",
        "",
        "Models: the shipped standard-trained `vit_nano_fmnist` and "
        "`vit_nano_elliptical_fmnist`, each fine-tuned from its checkpoint by PGD adversarial "
        f"training (Madry et al. 2018) at L-inf eps {args.eps:g} in pixel units with one recipe "
        f"and seed: `{shlex.join(train_argv('CARD', args, Path('runs/adversarial/ROLE')))}` (PGD "
        f"with {args.attack_steps} steps of 2.5 eps / steps from a uniform random start; AdamW, "
        "cosine schedule; the best checkpoint by PGD top-1 on 500 validation images). Shipped "
        "as `vit_nano_pgd_fmnist` and `vit_nano_elliptical_pgd_fmnist`; the standard-trained "
        f"cards are their twins. Evaluation: suite `{first.suite.name}` v{first.suite.version} "
        f"(PGD-20, APGD-CE alone and AutoAttack standard, eps {args.eps:g}, true labels) on "
        f"{same} {first.data.n_samples} seeded Fashion-MNIST test images for all four models. "
        f"{rerun_note}",
        "",
        "Top-1 (%) with 95% Wilson intervals over images (one training seed); wall time of "
        "each result in seconds on a shared machine:",
        "",
        "| model | attention | training | attack | top-1 (%) [95% CI] | wall (s) |",
        "|---|---|---|---|---|---|",
        *_result_rows(reports),
        "",
        "Paired differences on the same images in points (images only the first / only the "
        "second gets right, exact McNemar p):",
        "",
        "| attack | baseline: PGD-AT - standard | Elliptical: PGD-AT - standard | "
        "PGD-AT: Elliptical - baseline |",
        "|---|---|---|---|",
        *_difference_rows(reports),
        "",
        _acceptance(reports),
        "",
        END,
    ]
    return "\n".join(lines)


CARD_TEXT = """# PGD adversarially trained (issue 46); written by
# benchmarks/reproduction_adversarial.py --ship.
name = "{name}"
architecture = "{architecture}"
description = "{role} nano ViT fine-tuned by PGD adversarial training at L-inf eps {eps:g}"
checkpoint = "{name}.safetensors"
checkpoint_sha256 = "{sha}"
dataset = "Fashion-MNIST train ({images} images, PGD examples); validated on 500 test images"
training_command = "OMP_NUM_THREADS=1 {command}"  # one thread: bit-exact reruns

[recipe]
optimizer = "AdamW"
lr = {lr}
batch_size = 128
max_steps = {steps}
warmup_steps = {warmup}
schedule = "cosine"
label_smoothing = 0.1
weight_decay = 0.05
clip_grad = 1.0
adversarial = "pgd"
eps = {eps}
attack_steps = {attack_steps}
step_size = {step_size}
fine_tuned_from = "{parent}"
seed = 0

[metrics]  # top-1 on {n} seeded test images, suite {suite} v{suite_version}
{metrics}
"""


def _card_metrics(report: Report) -> str:
    """`clean_top1 = 0.7500`, `autoattack_top1 = ...` lines."""
    return "\n".join(
        f"{result.replace('-', '_')}_top1 = {_top1(report, result)[0]:.4f}" for result in RESULTS
    )


def ship(reports: dict[str, dict[str, Report]], args: argparse.Namespace) -> None:
    """Copy the PGD-AT checkpoints into models/ with cards quoting `reports`."""
    for role, (parent, name) in CARDS.items():
        target = ROOT / "models" / f"{name}.safetensors"
        shutil.copyfile(args.runs / role / "best.safetensors", target)
        report = reports[role]["pgd-at"]
        text = CARD_TEXT.format(
            name=name,
            architecture=ARCHITECTURES[role],
            role=role,
            eps=args.eps,
            sha=sha256_file(target),
            images=128 * args.steps,
            parent=parent,
            command=shlex.join(train_argv(parent, args, args.runs / role)),
            lr=args.lr,
            steps=args.steps,
            warmup=args.steps // 10,
            attack_steps=args.attack_steps,
            step_size=2.5 * args.eps / args.attack_steps,
            n=report.data.n_samples,
            suite=report.suite.name,
            suite_version=report.suite.version,
            metrics=_card_metrics(report),
        )
        (ROOT / "models" / f"{name}.toml").write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/adversarial"))
    parser.add_argument("--eps", type=float, default=0.1)
    parser.add_argument("--attack-steps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=150, help="optimiser steps")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--limit", type=int, default=200, help="test images attacked")
    parser.add_argument("--verify", action="store_true", help="retrain the baseline, compare")
    parser.add_argument("--ship", action="store_true", help="copy the models to models/")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "reproduction.md")
    args = parser.parse_args()
    args.runs.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        futures = {role: pool.submit(_train_and_evaluate, role, args) for role in CARDS}
        rerun_future = pool.submit(rerun_baseline, args) if args.verify else None
        reports = {role: future.result() for role, future in futures.items()}
    rerun = None
    if rerun_future is not None:  # the pool has finished: both trainings are on disk
        seconds = rerun_future.result()
        first, again = args.runs / "baseline", _rerun_folder(args)
        rerun = (same_weights(first / "best.safetensors", again / "best.safetensors"), seconds)
    if args.ship:
        ship(reports, args)
    section = _section(reports, args, rerun)
    write_section(args.out, section, START, END)
    print(section)


if __name__ == "__main__":
    main()
