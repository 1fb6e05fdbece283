"""The embedded default: baseline vs Elliptical nano ViT on Fashion-MNIST, end to end.

Uses the checkpoints shipped in `models/` when their cards exist; otherwise trains both
models briefly (same recipe and seed) so the demo still runs everything for real.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from robench.evaluation import EvalRequest, evaluate
from robench.model_spec import bundled_cards
from robench.report import Report
from robench.runner import Progress
from robench.training import TrainConfig, train

logger = logging.getLogger(__name__)

DEMO_MODELS = ("vit_nano_patch4_28", "vit_nano_elliptical_patch4_28")
DEMO_CARDS = ("vit_nano_fmnist", "vit_nano_elliptical_fmnist")


@dataclass(frozen=True)
class DemoPlan:
    suite: str
    limit: int
    train_steps: int
    train_limit: int


PLANS = {
    "full": DemoPlan(suite="demo", limit=1000, train_steps=300, train_limit=20000),
    "quick": DemoPlan(suite="smoke", limit=200, train_steps=60, train_limit=4000),
}


def _models(plan: DemoPlan, out_dir: Path) -> list[tuple[str, Path | None]]:
    """(MODEL, checkpoint) pairs: shipped cards when present, else freshly trained."""
    cards = bundled_cards()
    if all(name in cards for name in DEMO_CARDS):
        return [(name, None) for name in DEMO_CARDS]
    logger.info("no shipped checkpoints found: training both models for %d steps", plan.train_steps)
    pairs: list[tuple[str, Path | None]] = []
    for model in DEMO_MODELS:
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
        pairs.append((model, result.best_path))
    return pairs


def run_demo(
    out_dir: Path, *, quick: bool = False, progress: Progress | None = None
) -> list[tuple[Path, Report]]:
    """Evaluate the demo models; return (report path, report) pairs."""
    plan = PLANS["quick" if quick else "full"]
    reports = []
    for model, checkpoint in _models(plan, out_dir):
        path = out_dir / f"{Path(model).stem}.json"
        request = EvalRequest(
            suite=plan.suite,
            data="fashion-mnist",
            out=path,
            model=model,
            checkpoint=checkpoint,
            limit=plan.limit,
            batch_size=100,
            overwrite=True,
            command=["robench", "demo", *(["--quick"] if quick else [])],
        )
        reports.append((path, evaluate(request, progress=progress)))
    return reports
