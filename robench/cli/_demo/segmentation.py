"""The demo's segmentation section: baseline vs Elliptical nano Segmenter on fashion scenes.

Both shipped Segmenters under the `demo-segmentation` suite on the built-in fashion scenes
(docs/segmentation-data.md): clean, corruptions computed once for both models, and per-pixel
L-inf PGD; their mIoU compared and one scene drawn with its ground truth and both predicted
masks (`segmentation_overlay.png`). About a minute on a 2-core CPU.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from robench._core.progress import Progress
from robench.cli._demo.pairs import cards_missing, compared, evaluate_roles
from robench.evaluation.shared_samples import sharing_perturbed_samples
from robench.models.loading import LoadedModel, load_model
from robench.models.spec import bundled_cards
from robench.results.compare.comparison import Comparison, build_comparison
from robench.results.report.schema import Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from robench.results.compare.per_corruption import PerCorruption

logger = logging.getLogger(__name__)

# Role -> the model card of the shipped checkpoint (models/*.toml); the one place to change.
DEMO_SEGMENTERS = {
    "baseline": "segmenter_nano_baseline_scenes",
    "elliptical": "segmenter_nano_elliptical_scenes",
}
# Role -> the architecture, evaluated with random weights only where a caller allows it
# (tests and development runs before the checkpoints ship).
SEGMENTER_ARCHITECTURES = {
    "baseline": "segmenter_nano_baseline",
    "elliptical": "segmenter_nano_elliptical",
}
SUITE = "demo-segmentation"
# Scenes evaluated, by plan. Measured 2026-11-25 on the 2-core machine under load ~5 (other
# sessions' tests): 64 scenes took 226 s for both models, PGD 70% of it; 48 scenes on an idle
# machine (about 3x faster than that load) should take about a minute.
SCENES = {"full": 48, "quick": 16}
SUFFIX = "-segmentation"  # report file names: baseline-segmentation.json
OVERLAY = "segmentation_overlay.png"
METRICS = ["miou", "pixel_accuracy"]
MEAN = ["mean_corruption_miou"]  # the suite's aggregate, printed beside the metrics


@dataclass
class SegmentationDemo:
    reports: list[tuple[Path, Report]]
    comparison: Comparison
    figures: list[Path]
    overlay: Figure | None = None  # the overlay figure again, for the page


def printed_tables(found: SegmentationDemo) -> tuple[Comparison, PerCorruption]:
    """The section as the demo prints it, condensed to fit a terminal: per model, clean and
    PGD mIoU and pixel accuracy with the mean mIoU under corruption; then mIoU per corruption
    averaged over its severities. The reports and the page keep every column."""
    from robench.results.compare.per_corruption import build_per_corruption
    from robench.results.stats.aggregates import corruption_groups

    paths = [(str(path), report) for path, report in found.reports]
    present = {a.name for _, report in found.reports for a in report.aggregates}
    comparison = build_comparison(paths, metrics=METRICS + [a for a in MEAN if a in present])
    corrupted = {
        result.name
        for _, report in found.reports
        for results in corruption_groups(report).values()
        for result in results
    }
    kept = [column for column in comparison.columns if column.perturbation not in corrupted]
    return replace(comparison, columns=kept), build_per_corruption(paths, metric="miou")


def demo_segmenters(allow_random_weights: bool) -> dict[str, str] | None:
    """Role -> MODEL: the shipped cards; without them, the bare architectures when random
    weights are allowed, else None (the section is skipped)."""
    cards = bundled_cards()
    if allow_random_weights and not all(card in cards for card in DEMO_SEGMENTERS.values()):
        logger.warning("shipped Segmenters not found: evaluating random weights (development)")
        return dict(SEGMENTER_ARCHITECTURES)
    return None if cards_missing(DEMO_SEGMENTERS, "segmentation") else dict(DEMO_SEGMENTERS)


def evaluate_segmentation_demo(
    out_dir: Path,
    *,
    quick: bool,
    command: list[str],
    progress: Progress | None = None,
    allow_random_weights: bool = False,
    limit: int | None = None,
) -> SegmentationDemo | None:
    """Both Segmenters' reports, their comparison and the overlay figure; None without the
    shipped checkpoints (unless `allow_random_weights`)."""
    models = demo_segmenters(allow_random_weights)
    if models is None:
        return None
    scenes = limit or SCENES["quick" if quick else "full"]
    with sharing_perturbed_samples():  # both models see the same corrupted scenes
        reports = evaluate_roles(
            out_dir, models, suite=SUITE, suffix=SUFFIX, limit=scenes, batch_size=32,
            command=command, progress=progress, unit="scenes",
            allow_random_weights=allow_random_weights,
        )  # fmt: skip
    comparison = compared(reports, METRICS)
    loaded = {role: load_model(model) for role, model in models.items()}
    # Panel titles: the role, then the model (card) name, which is too long for one line.
    labels = {
        role: f"{role}\n{report.model.name}"
        for role, (_, report) in zip(models, reports, strict=True)
    }
    overlay = _overlay(loaded, labels, reports[0][1])
    from robench.results.plots.figures import save_figure

    path = save_figure(overlay, out_dir / OVERLAY)
    return SegmentationDemo(reports, comparison, [path], overlay)


def _overlay(loaded: dict[str, LoadedModel], labels: dict[str, str], report: Report) -> Figure:
    """The first evaluated scene, its ground truth and every model's predicted mask."""
    from robench.data.segmentation.label_maps import logits_at_labels
    from robench.data.segmentation.scenes import FashionScenes
    from robench.results.plots.segmentation import segmentation_overlay_figure
    from robench.results.stats.segmentation_metrics import dataset_metrics, pixel_counts

    first = next(iter(loaded.values()))
    assert first.preprocessing is not None  # every image model resolves one
    height, width = first.preprocessing.input_size[1:]
    scenes = FashionScenes(split="test", image_size=(height, width))
    index = report.samples["default"].indices[0]
    image, label_map = scenes[index]
    predictions, captions = {}, {}
    for role, model in loaded.items():
        with torch.inference_mode():
            logits = logits_at_labels(model.model(image[None]), label_map[None])
        pred = logits[0].argmax(0)
        found = dataset_metrics(pixel_counts(pred, label_map, len(scenes.classes))[None])
        predictions[labels[role]] = pred.numpy()
        miou, pixels = 100 * found["miou"], 100 * found["pixel_accuracy"]
        captions[labels[role]] = f"this scene: mIoU {miou:.1f}%, aAcc {pixels:.0f}%"
    return segmentation_overlay_figure(
        image.permute(1, 2, 0).numpy(),
        label_map.numpy(),
        predictions,
        scenes.classes,
        title=f"Fashion scene {index} (test split): ground truth and predicted masks",
        captions=captions,
        note="Clean image; colours are classes. The leaderboard gives mIoU over all scenes.",
    )
