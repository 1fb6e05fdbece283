"""The embedded default: baseline vs Elliptical nano ViT on Fashion-MNIST, end to end.

Evaluates the checkpoints shipped in `models/` (their cards) under the `demo` suite (FGSM,
PGD, SPSA and AutoAttack at Fashion-MNIST budgets, plus the paper's diagnostics), writes the
reports, compares them in a paper-style table and draws the paper's figures: CLS attention
heatmaps (Fig. 1), per-layer collapse curves (Fig. 3) and accuracy against eps. Without the
shipped checkpoints (a trimmed install) it trains both models briefly instead.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import torch

from robench.compare import Comparison, build_comparison
from robench.data import open_dataset
from robench.evaluation import EvalRequest, evaluate
from robench.model_loading import load_model
from robench.model_spec import bundled_cards
from robench.report import Report
from robench.runner import Progress
from robench.training import TrainConfig, train

logger = logging.getLogger(__name__)

DEMO_MODELS = {"baseline": "vit_nano_patch4_28", "elliptical": "vit_nano_elliptical_patch4_28"}
DEMO_CARDS = {"baseline": "vit_nano_fmnist", "elliptical": "vit_nano_elliptical_fmnist"}


@dataclass(frozen=True)
class DemoPlan:
    suite: str
    limit: int
    train_steps: int  # only when no shipped checkpoints exist
    train_limit: int


PLANS = {
    "full": DemoPlan(suite="demo", limit=500, train_steps=300, train_limit=20000),
    "quick": DemoPlan(suite="smoke", limit=200, train_steps=60, train_limit=4000),
}


@dataclass
class DemoResult:
    reports: list[tuple[Path, Report]]
    comparison: Comparison
    figures: list[Path] = field(default_factory=list)


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


def _accuracy_vs_eps(reports: list[tuple[str, Report]]) -> dict[str, list[tuple[float, float]]]:
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for role, report in reports:
        for result in report.results:
            eps = result.params.get("eps")
            if result.kind == "clean":
                for kind in ("fgsm", "pgd"):
                    series[f"{role} {kind}"].append((0.0, result.metrics["top1"].value))
            elif result.kind in ("fgsm", "pgd") and isinstance(eps, float):
                series[f"{role} {result.kind}"].append((eps, result.metrics["top1"].value))
    return {name: sorted(points) for name, points in series.items() if len(points) > 1}


def _figures(
    models: dict[str, tuple[str, Path | None]], reports: list[tuple[str, Report]], out_dir: Path
) -> list[Path]:
    from robench.diagnostics import plot_attention_comparison
    from robench.plots import plot_accuracy_vs_eps, plot_collapse_curves

    loaded = {role: load_model(name, checkpoint=ckpt) for role, (name, ckpt) in models.items()}
    first = next(iter(loaded.values()))
    data = open_dataset("fashion-mnist", preprocessing=first.preprocessing)
    images = torch.stack([data[i][0] for i in range(4)])
    figures = [
        plot_attention_comparison(
            {role: m.model for role, m in loaded.items()},
            images,
            out_dir / "attention_heatmaps.png",
        )
    ]
    curves = {
        role: d.values["per_layer"]
        for role, report in reports
        for d in report.diagnostics
        if d.kind == "collapse"
    }
    if curves:
        figures.append(plot_collapse_curves(curves, out_dir / "collapse.png"))
    series = _accuracy_vs_eps(reports)
    if series:
        figures.append(plot_accuracy_vs_eps(series, out_dir / "accuracy_vs_eps.png"))
    return figures


def run_demo(out_dir: Path, *, quick: bool = False, progress: Progress | None = None) -> DemoResult:
    """Evaluate the demo models, compare them and draw the figures."""
    plan = PLANS["quick" if quick else "full"]
    models = _models(plan, out_dir)
    reports: list[tuple[Path, Report]] = []
    for role, (model, checkpoint) in models.items():
        path = out_dir / f"{role}.json"
        request = EvalRequest(
            suite=plan.suite,
            data="fashion-mnist",
            out=path,
            model=model,
            checkpoint=checkpoint,
            limit=plan.limit,
            batch_size=200,
            overwrite=True,
            command=["robench", "demo", *(["--quick"] if quick else [])],
        )
        reports.append((path, evaluate(request, progress=progress)))
    comparison = build_comparison([(str(p), r) for p, r in reports], metrics=["top1"])
    roles = list(models)
    figures = _figures(models, [(roles[i], r) for i, (_, r) in enumerate(reports)], out_dir)
    return DemoResult(reports, comparison, figures)
