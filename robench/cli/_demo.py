"""The embedded default: baseline vs Elliptical nano ViT on Fashion-MNIST, end to end.

Evaluates the checkpoints shipped in `models/` (their cards) under the `demo` suite (FGSM,
PGD, SPSA and AutoAttack at Fashion-MNIST budgets, plus the paper's diagnostics), writes the
reports, compares them in a paper-style table and draws the paper's figures: CLS attention
heatmaps (Fig. 1), per-layer collapse curves (Fig. 3) and accuracy against eps. Then the same
two models under the 15 ImageNet-C corruptions computed on the fly (`demo-corruptions`), with
a per-corruption table, a corruption x severity heatmap and accuracy against severity. Without the
shipped checkpoints (a trimmed install) it trains both models briefly instead.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from robench.data import open_dataset
from robench.evaluation.request import EvalRequest, evaluate
from robench.evaluation.runner import Progress
from robench.models.loading import load_model
from robench.models.spec import bundled_cards
from robench.results.compare import Comparison, build_comparison
from robench.results.plots import AccuracySeries, accuracy_series
from robench.results.report import Report
from robench.training.train import TrainConfig, train

logger = logging.getLogger(__name__)

DEMO_MODELS = {"baseline": "vit_nano_patch4_28", "elliptical": "vit_nano_elliptical_patch4_28"}
DEMO_CARDS = {"baseline": "vit_nano_fmnist", "elliptical": "vit_nano_elliptical_fmnist"}


@dataclass(frozen=True)
class DemoPlan:
    suite: str
    limit: int
    corruption_suite: str
    corruption_limit: int
    train_steps: int  # only when no shipped checkpoints exist
    train_limit: int


PLANS = {
    "full": DemoPlan("demo", 500, "demo-corruptions", 500, train_steps=300, train_limit=20000),
    "quick": DemoPlan("smoke", 200, "corruptions-smoke", 100, train_steps=60, train_limit=4000),
}


@dataclass
class DemoResult:
    reports: list[tuple[Path, Report]]
    comparison: Comparison
    corruption_reports: list[tuple[Path, Report]]
    corruption_comparison: Comparison
    figures: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # everything the demo wrote, sorted


class _Steps:
    """Logs each phase of the demo with the time elapsed since it started."""

    def __init__(self) -> None:
        self._started = time.perf_counter()

    def __call__(self, message: str, *args: object) -> None:
        elapsed = time.perf_counter() - self._started
        logger.info("demo [%5.1fs] " + message, elapsed, *args)


def _written_since(out_dir: Path, started: float) -> list[Path]:
    return sorted(
        path for path in out_dir.rglob("*") if path.is_file() and path.stat().st_mtime >= started
    )


def _models(plan: DemoPlan, out_dir: Path) -> dict[str, tuple[str, Path | None]]:
    """Role -> (MODEL, checkpoint): the shipped cards when present, else freshly trained."""
    cards = bundled_cards()
    if all(card in cards for card in DEMO_CARDS.values()):
        return {role: (card, None) for role, card in DEMO_CARDS.items()}
    logger.warning(
        "shipped checkpoints not found: training both models for %d steps", plan.train_steps
    )
    chosen: dict[str, tuple[str, Path | None]] = {}
    for role, model in DEMO_MODELS.items():
        result = train(
            TrainConfig(
                model=model,
                out_dir=out_dir / "train" / model,
                max_steps=plan.train_steps,
                train_limit=plan.train_limit,
                val_limit=500,
                val_every=plan.train_steps,
                warmup_steps=plan.train_steps // 10,
                lr=2e-3,
                command=f"robench demo (built-in, {plan.train_steps} steps)",
            )
        )
        chosen[role] = (model, result.best_path)
    return chosen


def _accuracy_vs_eps(reports: list[tuple[str, Report]]) -> list[AccuracySeries]:
    """One series per (model, attack) of the suite: top-1 in % with its 95% interval."""
    return accuracy_series({f"{report.model.name} ({role})": report for role, report in reports})


def _figures(
    models: dict[str, tuple[str, Path | None]], reports: list[tuple[str, Report]], out_dir: Path
) -> list[Path]:
    from robench.diagnostics import plot_attention_comparison
    from robench.results.plots import plot_accuracy_vs_eps, plot_collapse_curves

    names = {role: f"{report.model.name} ({role})" for role, report in reports}
    loaded = {role: load_model(name, checkpoint=ckpt) for role, (name, ckpt) in models.items()}
    first = next(iter(loaded.values()))
    assert first.preprocessing is not None  # the demo's image models
    data = open_dataset("fashion-mnist", preprocessing=first.preprocessing)
    shown = [data[i] for i in range(4)]
    figures = [
        plot_attention_comparison(
            {names.get(role, role): m.model for role, m in loaded.items()},
            torch.stack([image for image, _ in shown]),
            out_dir / "attention_heatmaps.png",
            labels=[label for _, label in shown],
            class_names=data.classes,
        )
    ]
    collapse = {
        names[role]: d
        for role, report in reports
        for d in report.diagnostics
        if d.kind == "collapse"
    }
    if collapse:
        n_images = "/".join(sorted({str(d.n_samples) for d in collapse.values()}))
        note = (
            f"One checkpoint per model (one training seed), {n_images} Fashion-MNIST test images."
            "\nAcross 3 training seeds there is no difference: see reports/reproduction.md."
        )
        figures.append(
            plot_collapse_curves(
                {name: d.values["per_layer"] for name, d in collapse.items()},
                out_dir / "collapse.png",
                spread={name: d.values["per_layer_std"] for name, d in collapse.items()},
                title="Representation collapse: token similarity per layer",
                note=note,
            )
        )
    series = _accuracy_vs_eps(reports)
    if series:
        figures.append(
            plot_accuracy_vs_eps(
                series,
                out_dir / "accuracy_vs_eps.png",
                title="Top-1 accuracy under L∞ attacks, Fashion-MNIST test set",
                note="95% intervals: Wilson score; attacks use the true labels.",
            )
        )
    return figures


def run_demo(out_dir: Path, *, quick: bool = False, progress: Progress | None = None) -> DemoResult:
    """Evaluate the demo models, compare them and draw the figures."""
    started = time.time() - 1  # file times may be rounded down to the second
    step = _Steps()
    plan = PLANS["quick" if quick else "full"]
    models = _models(plan, out_dir)
    command = ["robench", "demo", *(["--quick"] if quick else [])]

    def evaluate_all(suite: str, limit: int, suffix: str) -> list[tuple[Path, Report]]:
        reports = []
        for role, (model, checkpoint) in models.items():
            path = out_dir / f"{role}{suffix}.json"
            step("evaluating %s (%s): suite %s on %d samples", role, model, suite, limit)
            request = EvalRequest(
                suite=suite,
                data="fashion-mnist",
                out=path,
                model=model,
                checkpoint=checkpoint,
                limit=limit,
                batch_size=200,
                overwrite=True,
                command=command,
            )
            reports.append((path, evaluate(request, progress=progress)))
        return reports

    reports = evaluate_all(plan.suite, plan.limit, "")
    corrupted = evaluate_all(plan.corruption_suite, plan.corruption_limit, "-corruptions")
    comparison = build_comparison([(str(p), r) for p, r in reports], metrics=["top1"])
    corruption_comparison = build_comparison([(str(p), r) for p, r in corrupted], metrics=["top1"])
    step("drawing the figures")
    roles = list(models)
    figures = _figures(models, [(roles[i], r) for i, (_, r) in enumerate(reports)], out_dir)
    figures += _corruption_figures([(roles[i], r) for i, (_, r) in enumerate(corrupted)], out_dir)
    step("done")
    return DemoResult(
        reports,
        comparison,
        corrupted,
        corruption_comparison,
        figures,
        _written_since(out_dir, started),
    )


def _corruption_figures(reports: list[tuple[str, Report]], out_dir: Path) -> list[Path]:
    from robench.results.corruption_plots import plot_corruption_figures

    named = {f"{report.model.name} ({role})": report for role, report in reports}
    return plot_corruption_figures(named, out_dir, "demo")
