"""The demo's certification section: baseline vs Elliptical nano ViT, trained under Gaussian
noise and certified by randomized smoothing at sigma 0.25 (Cohen, Rosenfeld and Kolter 2019).

Both shipped noise-trained models (`DEMO_SMOOTHED`, model cards in models/, fine-tuned from
the demo's nano pair by benchmarks/reproduction_certify.py) are evaluated with the
`demo-certify` suite on the same Fashion-MNIST test images: clean top-1, CERTIFY with n 500
noisy copies per image (certified accuracy at radii 0 to 0.5, the average certified radius,
abstentions) and PGD-L2 at 0.25 and 0.5 on the base classifier; reports/reproduction.md
certifies the same pair with n 1,000 on 200 images. The section compares them and draws
certified accuracy against the L2 radius (`certified_accuracy.png`, also on the page).
Certificates are lower bounds that no attack can lower, unlike the other sections'
accuracies under attack. Without the checkpoints the section is skipped with a warning.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from robench._core.progress import Progress
from robench.cli._demo.pairs import evaluate_roles
from robench.models.spec import bundled_cards
from robench.results.compare.comparison import Comparison, build_comparison
from robench.results.report.schema import Report

logger = logging.getLogger(__name__)

# Role -> the model card of the shipped noise-trained checkpoint; the one place to change.
DEMO_SMOOTHED = {
    "baseline": "vit_nano_noise_fmnist",
    "elliptical": "vit_nano_elliptical_noise_fmnist",
}
SUITE = "demo-certify"
# 600 noisy forwards of the nano ViT per image and model (about 0.2 s on 2 cores) keep the
# section to seconds; its intervals are wide (about +-13 points at 50 images).
SAMPLES = {"full": 50, "quick": 10}
SUFFIX = "-certify"  # report file names: baseline-certify.json
# The comparison's columns: certified accuracy at three of the suite's radii (the figure and
# the page show every radius).
METRICS = [
    "top1",
    "certified_accuracy@0",
    "certified_accuracy@0.25",
    "certified_accuracy@0.5",
    "acr",
    "abstention_rate",
]
FIGURE = "certified_accuracy.png"


@dataclass
class CertificationDemo:
    reports: list[tuple[Path, Report]]
    comparison: Comparison
    figure: Path | None  # certified accuracy against the radius, both models


def evaluate_certification_demo(
    out_dir: Path,
    *,
    quick: bool,
    command: list[str],
    progress: Progress | None = None,
    limit: int | None = None,
) -> CertificationDemo | None:
    """Both smoothed models' reports, their comparison and the certified-accuracy figure;
    None without the shipped checkpoints (a warning says so)."""
    cards = bundled_cards()
    missing = [card for card in DEMO_SMOOTHED.values() if card not in cards]
    if missing:
        logger.warning("models/%s not installed: the certification section is skipped",
                       ", ".join(missing))  # fmt: skip
        return None
    samples = limit or SAMPLES["quick" if quick else "full"]
    reports = evaluate_roles(
        out_dir, DEMO_SMOOTHED, suite=SUITE, suffix=SUFFIX, limit=samples, batch_size=100,
        command=command, progress=progress, unit="images",
    )  # fmt: skip
    comparison = build_comparison([(str(p), r) for p, r in reports], metrics=METRICS)
    named = {
        f"{report.model.name} ({role})": report
        for role, (_, report) in zip(DEMO_SMOOTHED, reports, strict=True)
    }
    return CertificationDemo(reports, comparison, _figure(named, out_dir / FIGURE))


def _figure(reports: dict[str, Report], path: Path) -> Path | None:
    from robench.results.plots.certified import certified_figure
    from robench.results.plots.figures import save_figure

    fig = certified_figure(reports)
    return None if fig is None else save_figure(fig, path)
