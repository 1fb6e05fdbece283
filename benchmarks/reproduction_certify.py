"""The certification part of the reproduction study (reports/reproduction.md): the shipped
nano ViT pair, baseline and Elliptical, fine-tuned under Gaussian noise and certified by
randomized smoothing at sigma 0.25 (Cohen, Rosenfeld and Kolter 2019).

Fine-tunes the shipped `vit_nano_fmnist` and `vit_nano_elliptical_fmnist` under noise with
one recipe (`robench train CARD --noise-sd 0.25`, one CPU thread each, both at once), then
evaluates each under the `certify-smoke` suite (clean top-1, CERTIFY with n 1,000, PGD-L2 at
0.25 and 0.5) on the same seeded test images, and writes a section of reports/reproduction.md
with 95% intervals and paired differences. Finished trainings and reports are reused (delete
RUNS to redo them). `--ship` copies the checkpoints to models/ with model cards, which the
demo's certification section evaluates.

    python benchmarks/reproduction_certify.py --runs runs/certify --limit 200 --ship
"""

from __future__ import annotations

import argparse
import concurrent.futures
import shlex
import shutil
import time
from datetime import date
from pathlib import Path

from report_sections import load_average, write_section
from reproduction_common import paired_difference, robench_one_thread

from robench._core.version import __version__
from robench.models.checkpoints import sha256_file
from robench.results.report.schema import Report, read_report

ROOT = Path(__file__).resolve().parents[1]
# Role -> (the shipped card fine-tuned, the card shipped after noise training).
CARDS = {
    "baseline": ("vit_nano_fmnist", "vit_nano_noise_fmnist"),
    "elliptical": ("vit_nano_elliptical_fmnist", "vit_nano_elliptical_noise_fmnist"),
}
ARCHITECTURES = {"baseline": "vit_nano_patch4_28", "elliptical": "vit_nano_elliptical_patch4_28"}
SUITE = "certify-smoke"
SMOOTHING = "smoothing-0.25"
START, END = "<!-- certify -->", "<!-- /certify -->"


def train_argv(card: str, args: argparse.Namespace, out: Path) -> list[str]:
    """The `robench train` command of one run (the shipped cards quote it)."""
    return [
        "robench", "train", card, "--noise-sd", f"{args.sigma:g}", "--max-steps",
        str(args.steps), "--batch-size", "128", "--lr", f"{args.lr:g}", "--warmup-steps",
        str(args.steps // 10), "--train-limit", str(128 * args.steps), "--val-limit", "1000",
        "--val-every", "100", "--seed", "0", "-o", str(out),
    ]  # fmt: skip


def _train_and_evaluate(role: str, args: argparse.Namespace) -> Report:
    """Fine-tune one model under noise and certify it (each skipped when done)."""
    folder = args.runs / role
    if not (folder / "best.safetensors").exists():
        robench_one_thread(train_argv(CARDS[role][0], args, folder)[1:])
    report = folder / "certify.json"
    if not report.exists():
        robench_one_thread(
            ["eval", "-c", str(folder / "best.safetensors"), "--suite",
             SUITE, "--limit", str(args.limit), "--seed", "0", "--overwrite", "-o", str(report)]
        )  # fmt: skip
    return read_report(report)


def _metric(report: Report, result: str, metric: str) -> tuple[float, tuple[float, float]]:
    value = next(r for r in report.results if r.name == result).metrics[metric]
    return value.value, value.ci95


def _cell(report: Report, result: str, metric: str, scale: float) -> str:
    value, (low, high) = _metric(report, result, metric)
    digits = 1 if scale == 100 else 3
    return f"{scale * value:.{digits}f} [{scale * low:.{digits}f}, {scale * high:.{digits}f}]"


def _certified(report: Report, radius: float) -> list[bool]:
    """Per image: the smoothed prediction is right and certified beyond `radius`."""
    predictions = report.sample_values(SMOOTHING, "smoothed_prediction") or []
    radii = report.sample_values(SMOOTHING, "radius") or []
    targets = report.samples["default"].targets
    return [p == t and r > radius for p, r, t in zip(predictions, radii, targets, strict=True)]


def _rows(base: Report, ell: Report) -> list[str]:
    """One row per metric: clean and PGD top-1, certified accuracy per radius, ACR,
    abstentions."""
    rows = []
    for result in ("clean", "pgd-l2-0.25", "pgd-l2-0.5"):
        paired = paired_difference(
            [bool(v) for v in base.sample_values(result, "top1") or []],
            [bool(v) for v in ell.sample_values(result, "top1") or []],
        )
        rows.append(
            f"| {result} top-1, base classifier | {_cell(base, result, 'top1', 100)} | "
            f"{_cell(ell, result, 'top1', 100)} | {paired} |"
        )
    smoothing = next(r for r in base.results if r.name == SMOOTHING)
    for name in sorted(m for m in smoothing.metrics if m.startswith("certified_accuracy@")):
        radius = float(name.split("@", 1)[1])
        paired = paired_difference(_certified(base, radius), _certified(ell, radius))
        rows.append(
            f"| certified accuracy at r = {radius:g} | {_cell(base, SMOOTHING, name, 100)} | "
            f"{_cell(ell, SMOOTHING, name, 100)} | {paired} |"
        )
    rows.append(
        f"| average certified radius (ACR) | {_cell(base, SMOOTHING, 'acr', 1)} | "
        f"{_cell(ell, SMOOTHING, 'acr', 1)} | |"
    )
    rows.append(
        f"| abstentions | {_cell(base, SMOOTHING, 'abstention_rate', 100)} | "
        f"{_cell(ell, SMOOTHING, 'abstention_rate', 100)} | |"
    )
    return rows


def _section(reports: dict[str, Report], args: argparse.Namespace, minutes: float) -> str:
    first = reports["baseline"]
    lines = [
        START,
        "",
        f"Generated by `python benchmarks/reproduction_certify.py --limit {args.limit} "
        f"--steps {args.steps}` on {date.today().isoformat()} (robench {__version__}, one CPU "
        f"thread per run, {minutes:.0f} minutes in all, load {load_average()}).",
        "",
        "Models: the shipped `vit_nano_fmnist` and `vit_nano_elliptical_fmnist`, each "
        f"fine-tuned from its checkpoint under Gaussian pixel noise sigma {args.sigma:g}, as "
        "Cohen et al. train base classifiers, with one recipe: "
        f"`{shlex.join(train_argv('CARD', args, Path('runs/noise')))}` (AdamW, cosine schedule; "
        "the best checkpoint by validation top-1 under the same noise). Shipped as "
        "`vit_nano_noise_fmnist` and `vit_nano_elliptical_noise_fmnist`. Evaluation: suite "
        f"`{SUITE}` v{first.suite.version} (CERTIFY at sigma {args.sigma:g}, n0 100, n 1,000, "
        "alpha 0.001; PGD-L2-20 at 0.25 and 0.5 on the base classifier) on the same "
        f"{first.data.n_samples} seeded Fashion-MNIST test images for both models, one "
        "training seed.",
        "",
        "Per model: the value (%, ACR in L2 pixel units) with its 95% interval (Wilson score "
        "for accuracies and abstentions, percentile bootstrap for ACR) over images, not "
        "training seeds. Difference: Elliptical - baseline on the same images in points "
        "(images only the baseline / only Elliptical gets, exact McNemar p):",
        "",
        "| metric | baseline | Elliptical | difference |",
        "|---|---|---|---|",
        *_rows(reports["baseline"], reports["elliptical"]),
        "",
        END,
    ]
    return "\n".join(lines)


CARD_TEXT = """# Shipped for the demo's certification section; written by
# benchmarks/reproduction_certify.py --ship.
name = "{name}"
architecture = "{architecture}"
description = "{role} nano ViT of the demo, fine-tuned under Gaussian noise sigma {sigma:g}"
checkpoint = "{name}.safetensors"
checkpoint_sha256 = "{sha}"
dataset = "Fashion-MNIST train ({images} noisy images); validated on 1000 test images, noisy"
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
noise_sd = {sigma}
seed = 0

[metrics]  # on {n} seeded test images, suite {suite} v{suite_version}
{metrics}
"""


def _card_metrics(report: Report) -> str:
    """`clean_top1 = 0.8500`, `smoothing_0_25_certified_accuracy_0_25 = ...` lines."""
    lines = []
    for result in report.results:
        for metric, value in result.metrics.items():
            if metric in ("top1", "acr", "abstention_rate") or metric.startswith("certified"):
                key = f"{result.name}_{metric}".replace("-", "_").replace("@", "_")
                lines.append(f"{key.replace('.', '_')} = {value.value:.4f}")
    return "\n".join(lines)


def ship(reports: dict[str, Report], args: argparse.Namespace) -> None:
    """Copy the checkpoints into models/ with cards quoting `reports`."""
    for role, (parent, name) in CARDS.items():
        target = ROOT / "models" / f"{name}.safetensors"
        shutil.copyfile(args.runs / role / "best.safetensors", target)
        report = reports[role]
        text = CARD_TEXT.format(
            name=name,
            architecture=ARCHITECTURES[role],
            role=role,
            sigma=args.sigma,
            sha=sha256_file(target),
            images=128 * args.steps,
            parent=parent,
            command=shlex.join(train_argv(parent, args, Path(f"runs/{name}"))),
            lr=args.lr,
            steps=args.steps,
            warmup=args.steps // 10,
            n=report.data.n_samples,
            suite=report.suite.name,
            suite_version=report.suite.version,
            metrics=_card_metrics(report),
        )
        (ROOT / "models" / f"{name}.toml").write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/certify"))
    parser.add_argument("--sigma", type=float, default=0.25)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--limit", type=int, default=200, help="test images certified")
    parser.add_argument("--ship", action="store_true", help="copy the models to models/")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "reproduction.md")
    args = parser.parse_args()
    args.runs.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = {role: pool.submit(_train_and_evaluate, role, args) for role in CARDS}
        reports = {role: future.result() for role, future in futures.items()}
    if args.ship:
        ship(reports, args)
    section = _section(reports, args, (time.monotonic() - started) / 60)
    write_section(args.out, section, START, END)
    print(section)


if __name__ == "__main__":
    main()
