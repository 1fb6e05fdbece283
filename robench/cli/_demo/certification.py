"""The demo's certification section: baseline vs Elliptical nano ViT, trained under Gaussian
noise and certified by randomized smoothing at sigma 0.25 (Cohen, Rosenfeld and Kolter 2019):
the shipped noise-trained pair (`DEMO_SMOOTHED`, written by benchmarks/reproduction_certify.py)
under the `demo-certify` suite, compared and drawn as certified accuracy against the L2 radius
(reports/reproduction.md certifies the same pair with n 1,000 on 200 images).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from robench._core.progress import Progress
from robench.cli._demo.pairs import cards_missing, compared, evaluate_roles
from robench.results.compare.comparison import Comparison
from robench.results.report.schema import Report

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
    """Both smoothed models' reports, comparison and figure; None without the checkpoints."""
    if cards_missing(DEMO_SMOOTHED, "certification"):
        return None
    samples = limit or SAMPLES["quick" if quick else "full"]
    reports = evaluate_roles(
        out_dir, DEMO_SMOOTHED, suite=SUITE, suffix=SUFFIX, limit=samples, batch_size=100,
        command=command, progress=progress, unit="images",
    )  # fmt: skip
    comparison = compared(reports, METRICS)
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
