"""The text-classification part of the reproduction study (reports/reproduction.md, the
paper's Tables 13 and 14: Switch Transformers pretrained as language models, then fine-tuned
on SST-2), at nano scale on the built-in Python docs.

For each seed and for the baseline and the Elliptical Switch (top-1 routing, 4 experts), it
runs `robench train` twice: pretraining `switch_lm_nano[_elliptical]` on the python-docs
corpus, then fine-tuning `switch_classifier_nano[_elliptical]` from that checkpoint on
python-docs-sections (8 parts of the docs: the stand-in for SST-2, which cannot be downloaded
here). Then it evaluates the language models' test perplexity (suite `text-smoke`) and the
classifiers' accuracy clean and under DeepWordBug and PWWS (suite `demo-text-classification`,
200 queries per sample) on a seeded subset of the test paragraphs, and writes a section of
reports/reproduction.md with 95% intervals and paired differences. Finished runs are reused
(delete RUNS to retrain).

    python benchmarks/reproduction_text_classification.py --runs runs/tc-repro --seeds 0 1
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import statistics
import subprocess
import sys
from datetime import date
from pathlib import Path

from report_sections import load_average, write_section

from robench._core.version import __version__
from robench.evaluation.request import EvalRequest, evaluate
from robench.results.report.schema import Report
from robench.results.stats.paired_tests import mcnemar_exact

ROOT = Path(__file__).resolve().parents[1]
ROLES = {"baseline": "", "elliptical": "_elliptical"}
START, END = "<!-- text-classification -->", "<!-- /text-classification -->"
ATTACKS = ("deepwordbug", "pwws")


def _robench(*args: str) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "robench", *args], check=True, env=env, cwd=ROOT)


def _train(runs: Path, role: str, seed: int, pretrain: int, finetune: int) -> Path:
    """Pretrain then fine-tune one model (one thread); the classifier's best checkpoint."""
    suffix, folder = ROLES[role], runs / f"{role}-seed{seed}"
    lm, classifier = folder / "lm", folder / "classifier"
    if not (lm / "best.safetensors").exists():
        _robench(
            "train", f"switch_lm_nano{suffix}", "--data", "python-docs",
            "--max-steps", str(pretrain), "--batch-size", "16", "--target-length", "128",
            "--lr", "1e-3", "--warmup-steps", str(pretrain // 10), "--vocab-size", "8000",
            "--seed", str(seed), "-o", str(lm),
        )  # fmt: skip
    if not (classifier / "best.safetensors").exists():
        _robench(
            "train", f"switch_classifier_nano{suffix}", "--init-from",
            str(lm / "best.safetensors"), "--max-steps", str(finetune), "--batch-size", "32",
            "--lr", "5e-4", "--warmup-steps", str(finetune // 10), "--seed", str(seed),
            "-o", str(classifier),
        )  # fmt: skip
    return folder


def _evaluate(checkpoint: Path, suite: str, out: Path, limit: int | None) -> Report:
    request = EvalRequest(
        suite=suite,
        data=None,
        out=out,
        checkpoint=checkpoint,
        limit=limit,
        overwrite=True,
        command=["python", "benchmarks/reproduction_text_classification.py"],
    )
    return evaluate(request)


def _metric(report: Report, result: str, name: str) -> tuple[float, tuple[float, float]]:
    value = next(r for r in report.results if r.name == result).metrics[name]
    return value.value, value.ci95


def _cell(report: Report, result: str, name: str, scale: float = 100.0) -> str:
    value, (low, high) = _metric(report, result, name)
    return f"{scale * value:.1f} [{scale * low:.1f}, {scale * high:.1f}]"


def _paired_top1(base: Report, ell: Report, result: str) -> str:
    """Elliptical - baseline top-1 (pp) on the same paragraphs, exact McNemar p."""
    b = base.sample_values(result, "top1") or []
    e = ell.sample_values(result, "top1") or []
    only_base = sum(1 for x, y in zip(b, e, strict=True) if x and not y)
    only_ell = sum(1 for x, y in zip(b, e, strict=True) if y and not x)
    diff = 100 * (only_ell - only_base) / max(len(b), 1)
    return f"{diff:+.1f} (p = {mcnemar_exact(only_base, only_ell):.2g})"


def _rows(seed: int, reports: dict[str, dict[str, Report]]) -> list[str]:
    lm_b, lm_e = reports["baseline"]["lm"], reports["elliptical"]["lm"]
    base, ell = reports["baseline"]["classifier"], reports["elliptical"]["classifier"]
    rows = [
        f"| {seed} | test perplexity (clean) | {_cell(lm_b, 'clean', 'perplexity', 1)} | "
        f"{_cell(lm_e, 'clean', 'perplexity', 1)} | |",
        f"| {seed} | top-1 clean (%) | {_cell(base, 'clean', 'top1')} | "
        f"{_cell(ell, 'clean', 'top1')} | {_paired_top1(base, ell, 'clean')} |",
    ]
    for attack in ATTACKS:
        rows += [
            f"| {seed} | top-1 under {attack} (%) | {_cell(base, attack, 'top1')} | "
            f"{_cell(ell, attack, 'top1')} | {_paired_top1(base, ell, attack)} |",
            f"| {seed} | {attack} success rate (%) | "
            f"{_cell(base, attack, 'attack_success_rate')} | "
            f"{_cell(ell, attack, 'attack_success_rate')} | |",
        ]
    return rows


def _section(all_reports: dict[int, dict[str, dict[str, Report]]], args: argparse.Namespace) -> str:
    seeds = sorted(all_reports)
    lines = [
        START,
        "",
        "## Switch Transformers pretrained, then fine-tuned as classifiers (the paper's Tables "
        "13 and 14, at this scale)",
        "",
        f"Generated by `python benchmarks/reproduction_text_classification.py --seeds "
        f"{' '.join(map(str, seeds))} --pretrain-steps {args.pretrain_steps} --finetune-steps "
        f"{args.finetune_steps} --limit {args.limit}` on {date.today().isoformat()} (robench "
        f"{__version__}, load {load_average()}).",
        "",
        "Protocol: `switch_lm_nano` and `switch_lm_nano_elliptical` (4 blocks of width 64, 4 "
        "experts of 128 with top-1 routing in every block, Elliptical Attention in blocks 2-4) "
        f"are pretrained on the Python-docs corpus ({args.pretrain_steps} steps of 16 x 128 "
        "tokens, vocabulary of 8000 words), then `switch_classifier_nano[_elliptical]` starts "
        f"from that backbone and is fine-tuned on python-docs-sections ({args.finetune_steps} "
        "steps of 32 paragraphs, 8 classes; the paper used SST-2, 2 classes, which cannot be "
        "downloaded here). Same recipe and seed for both. Evaluation on a seeded subset of "
        f"{args.limit} test paragraphs, the same for both models: clean, DeepWordBug and PWWS "
        "with 200 queries per sample (suite `demo-text-classification`); perplexity on the "
        "test split (suite `text-smoke`, windows of 64 tokens).",
        "",
        "Values with 95% intervals (Wilson for accuracy, bootstrap otherwise); difference: "
        "Elliptical - baseline on the same paragraphs, percentage points, exact McNemar p:",
        "",
        "| seed | measure | baseline | elliptical | difference |",
        "|---|---|---|---|---|",
    ]
    for seed in seeds:
        lines += _rows(seed, all_reports[seed])
    clean = {
        role: [_metric(all_reports[s][role]["classifier"], "clean", "top1")[0] for s in seeds]
        for role in ROLES
    }
    under = {
        role: [_metric(all_reports[s][role]["classifier"], "deepwordbug", "top1")[0] for s in seeds]
        for role in ROLES
    }
    mean = {role: 100 * statistics.fmean(clean[role]) for role in ROLES}
    lines += [
        "",
        f"Mean over {len(seeds)} seeds: clean top-1 {mean['baseline']:.1f}% "
        f"(baseline) vs {mean['elliptical']:.1f}% (Elliptical); under "
        f"DeepWordBug {100 * statistics.fmean(under['baseline']):.1f}% vs "
        f"{100 * statistics.fmean(under['elliptical']):.1f}%. The paper reports +1.0 to +1.3 "
        "points of SST-2 accuracy for Elliptical (Table 13) and +4.5 (Table 14); read the "
        "per-seed intervals above before reading a direction into these nano numbers.",
        "",
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/tc-repro"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--pretrain-steps", type=int, default=600)
    parser.add_argument("--finetune-steps", type=int, default=600)
    parser.add_argument("--limit", type=int, default=256)
    parser.add_argument("--jobs", type=int, default=2, help="trainings run at once")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "reproduction.md")
    args = parser.parse_args()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {
            (seed, role): pool.submit(
                _train, args.runs, role, seed, args.pretrain_steps, args.finetune_steps
            )
            for seed in args.seeds
            for role in ROLES
        }
        folders = {key: future.result() for key, future in futures.items()}
    reports: dict[int, dict[str, dict[str, Report]]] = {}
    for (seed, role), folder in folders.items():
        lm = _evaluate(folder / "lm" / "best.safetensors", "text-smoke", folder / "lm.json", 64)
        classifier = _evaluate(
            folder / "classifier" / "best.safetensors",
            "demo-text-classification",
            folder / "classifier.json",
            args.limit,
        )
        reports.setdefault(seed, {})[role] = {"lm": lm, "classifier": classifier}
    write_section(args.out, _section(reports, args), START, END)
    print(f"wrote the text-classification section of {args.out}")


if __name__ == "__main__":
    main()
