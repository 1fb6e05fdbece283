"""The embedded default: baseline vs Elliptical nano ViT on Fashion-MNIST, end to end.

`robench demo` runs the tour (`PLANS["tour"]`); `--full` and `--quick` run every section
(`DemoPlan.every_section`; listed in `robench demo --help`), each other section in its own
module. Each phase is sized before it starts (`planned_phases`, `phases.py`). The paper's
figures: CLS attention heatmaps (Fig. 1) and per-layer collapse curves (Fig. 3). Without the
shipped checkpoints it trains the image and language models briefly instead and skips the
Segmenters, classifiers and certificates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from robench._core.extras import install_command
from robench._core.progress import Progress
from robench.cli._demo.certification import SUFFIX as CERTIFICATION_SUFFIX
from robench.cli._demo.certification import CertificationDemo, evaluate_certification_demo
from robench.cli._demo.page import write_index
from robench.cli._demo.pairs import compared, evaluate_roles
from robench.cli._demo.phases import FIXED_S, Phase, PhaseClock, evaluation_phase
from robench.cli._demo.segmentation import SUFFIX as SEGMENTATION_SUFFIX
from robench.cli._demo.segmentation import SegmentationDemo, evaluate_segmentation_demo
from robench.cli._demo.text_classification import SUFFIX as TEXT_CLASSIFICATION_SUFFIX
from robench.cli._demo.text_classification import (
    TextClassificationDemo,
    evaluate_text_classification_demo,
)
from robench.data import open_dataset
from robench.evaluation.shared_samples import sharing_perturbed_samples
from robench.models.loading import load_model
from robench.models.spec import bundled_cards
from robench.results.compare.comparison import Comparison
from robench.results.plots.figures import accuracy_series
from robench.results.report.schema import Report
from robench.training.train import TrainConfig, train

if TYPE_CHECKING:
    from robench.results.compare.html.figures import PageFigure

logger = logging.getLogger(__name__)

DEMO_MODELS = {"baseline": "vit_nano_patch4_28", "elliptical": "vit_nano_elliptical_patch4_28"}
DEMO_CARDS = {"baseline": "vit_nano_fmnist", "elliptical": "vit_nano_elliptical_fmnist"}
DEMO_LM_MODELS = {"baseline": "transformer_lm_nano", "elliptical": "transformer_lm_nano_elliptical"}
DEMO_LM_CARDS = {
    "baseline": "transformer_lm_nano_pydocs",
    "elliptical": "transformer_lm_nano_elliptical_pydocs",
}


@dataclass(frozen=True)
class DemoPlan:
    suite: str
    limit: int
    corruption_suite: str
    corruption_limit: int
    text_suite: str
    text_limit: int  # evaluation windows of the Python-docs test split
    train_steps: int  # only when no shipped checkpoints exist
    train_limit: int
    # Every section (language models, segmentation, text classification, certification);
    # False: the tour, attacks and corruptions on the nano ViT pair only.
    every_section: bool = True


PLANS = {
    # Corruptions on 250 images (45 corruption x severity results each): the 95% interval of
    # the mean corruption accuracy widens from about +-2 points (500 images) to +-3.
    "full": DemoPlan(
        "demo", 500, "demo-corruptions", 250, "demo-text", 150, train_steps=300, train_limit=20000
    ),
    "quick": DemoPlan(
        "smoke", 200, "corruptions-smoke", 100, "text-smoke", 60, train_steps=60, train_limit=4000
    ),
}
# `robench demo` without options: the quick plan's image half (the same samples, so the same
# per-sample records), its figures and the page; every other section with --full or --quick.
PLANS["tour"] = replace(PLANS["quick"], every_section=False)


@dataclass
class DemoResult:
    reports: list[tuple[Path, Report]]
    comparison: Comparison
    corruption_reports: list[tuple[Path, Report]]
    corruption_comparison: Comparison
    text_reports: list[tuple[Path, Report]] = field(default_factory=list)
    text_comparison: Comparison | None = None  # None in the tour (no language models)
    # The shipped subword model (its own BPE tokenizer), whole documents; none when not shipped.
    subword_reports: list[tuple[Path, Report]] = field(default_factory=list)
    subword_comparison: Comparison | None = None
    # Baseline vs Elliptical nano Segmenter; none without the shipped checkpoints.
    segmentation: SegmentationDemo | None = None
    # Baseline vs Elliptical nano text classifier; none without the checkpoints or WordNet.
    text_classification: TextClassificationDemo | None = None
    # Noise-trained baseline vs Elliptical nano ViT, certified; none without the checkpoints.
    certification: CertificationDemo | None = None
    # Sections left out for a missing optional extra: report suffix -> the line saying so.
    skipped: dict[str, str] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # everything the demo wrote, sorted


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


def _language_models(plan: DemoPlan, out_dir: Path) -> dict[str, tuple[str, Path | None]]:
    """Role -> (MODEL, checkpoint) of the language models: shipped cards, else trained."""
    from robench.training.train_lm import LanguageTrainConfig, train_language_model

    cards = bundled_cards()
    if all(card in cards for card in DEMO_LM_CARDS.values()):
        return {role: (card, None) for role, card in DEMO_LM_CARDS.items()}
    steps = plan.train_steps // 5
    logger.warning("shipped language models not found: training both for %d steps", steps)
    chosen: dict[str, tuple[str, Path | None]] = {}
    for role, model in DEMO_LM_MODELS.items():
        result = train_language_model(
            LanguageTrainConfig(
                model=model,
                out_dir=out_dir / "train" / model,
                max_steps=steps,
                target_length=128,
                lr=1e-3,
                warmup_steps=steps // 10,
                val_every=steps,
                val_limit=50,
                vocab_size=8000,
                extra_words=("AAA",),
                command=f"robench demo (built-in, {steps} steps)",
            )
        )
        chosen[role] = (model, result.best_path)
    return chosen


def _figures(
    models: dict[str, tuple[str, Path | None]], reports: list[tuple[str, Report]], out_dir: Path
) -> list[Path]:
    from robench.diagnostics import plot_attention_comparison
    from robench.results.plots.figures import plot_accuracy_vs_eps, plot_collapse_curves

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
    # One series per (model, attack) of the suite: top-1 in % with its 95% interval.
    series = accuracy_series({names[role]: report for role, report in reports})
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


def _evaluator(
    out_dir: Path, command: list[str], step: PhaseClock, progress: Progress | None
) -> Callable[..., list[tuple[Path, Report]]]:
    """`evaluate_roles`, each evaluation a phase of `step`."""
    return partial(
        evaluate_roles,
        out_dir,
        batch_size=200,
        command=command,
        progress=progress,
        start=step.start,
    )


def _optional_sections(plan: DemoPlan) -> dict[str, list[tuple[str, str]]]:
    """Report suffix -> the (MODEL, suite) evaluations of each section that may need an
    optional extra (the image and word-level language-model sections need none)."""
    from robench.cli._demo import segmentation, text_classification
    from robench.cli._demo.bpe import bpe_model_folder, shown_folder

    folder = bpe_model_folder()
    subword = [(f"hf:{shown_folder(folder)}", plan.text_suite)] if folder is not None else []
    pairs = (
        (segmentation, segmentation.DEMO_SEGMENTERS),
        (text_classification, text_classification.DEMO_CLASSIFIERS),
    )
    sections = {
        module.SUFFIX: [(m, module.SUITE) for m in models.values()] for module, models in pairs
    }
    return {"-subword": subword, **sections}


def skipped_sections(plan: DemoPlan) -> dict[str, str]:
    """Report suffix -> one line naming the missing extra and the command that adds it, for
    each section that needs a module that is not installed; known before any work."""
    from robench.evaluation.checks.required_extras import missing_for

    skipped = {}
    for suffix, evaluations in _optional_sections(plan).items():
        for model, suite in evaluations:
            error = missing_for(model, suite)
            if error is not None:
                skipped[suffix] = (
                    f"skipped the section {INDEX_TITLES[suffix]!r}: {error.needed_for} needs "
                    f"{error.module}, which is not installed; `{install_command(error.extra)}` "
                    "adds it."
                )
                break
    return skipped


def run_demo(out_dir: Path, *, mode: str = "tour", progress: Progress | None = None) -> DemoResult:
    """Evaluate the demo models, compare them and draw the figures: the tour (attacks and
    corruptions on the nano ViT pair) or, with mode "quick" or "full", every section; sections
    that need an optional extra that is not installed are skipped (`DemoResult.skipped`)."""
    from robench.results.plots.corruptions import plot_corruption_figures

    started = time.time() - 1  # file times may be rounded down to the second
    plan = PLANS[mode]
    skipped = skipped_sections(plan) if plan.every_section else {}
    for line in skipped.values():
        logger.warning(line)
    models = _models(plan, out_dir)
    step = PhaseClock(planned_phases(plan, skipped))
    command = ["robench", "demo", *({"quick": ["--quick"], "full": ["--full"]}.get(mode, []))]

    evaluate_all = _evaluator(out_dir, command, step, progress)
    reports = evaluate_all(models, suite=plan.suite, suffix="", limit=plan.limit)
    with sharing_perturbed_samples():  # both models see the same corrupted images: make them once
        corrupted = evaluate_all(
            models, suite=plan.corruption_suite, suffix="-corruptions", limit=plan.corruption_limit
        )
    result = DemoResult(
        reports,
        compared(reports, ["top1"]),
        corrupted,
        compared(corrupted, ["top1"]),
        skipped=skipped,
    )
    if plan.every_section:
        _other_sections(result, plan, out_dir, command, step, progress)
    step.start("drawing the figures")
    by_role = [(role, report) for role, (_, report) in zip(models, reports, strict=True)]
    result.figures = _figures(models, by_role, out_dir)
    named = {f"{r.model.name} ({role})": r for role, (_, r) in zip(models, corrupted, strict=True)}
    result.figures += plot_corruption_figures(named, out_dir, "demo")
    step.start("writing the page")
    _write_page(result, out_dir)
    step.done()
    result.files = _written_since(out_dir, started)
    return result


def planned_phases(plan: DemoPlan, skipped: Mapping[str, str]) -> list[Phase]:
    """Every phase `run_demo` will log for `plan`, in order, each sized in idle seconds."""
    from robench.cli._demo import certification, segmentation, text_classification
    from robench.cli._demo.bpe import BPE_DOCUMENTS, bpe_model_folder

    size = "quick" if plan is not PLANS["full"] else "full"
    phases = [
        evaluation_phase(f"{role}: {suite}", suite, limit)
        for suite, limit in (
            (plan.suite, plan.limit),
            (plan.corruption_suite, plan.corruption_limit),
        )
        for role in DEMO_CARDS
    ]
    if plan.every_section:
        phases += [evaluation_phase(f"{r}: {plan.text_suite}", plan.text_suite, plan.text_limit)
                   for r in DEMO_LM_CARDS]  # fmt: skip
        if "-subword" not in skipped and bpe_model_folder() is not None:
            documents = BPE_DOCUMENTS[size] or 19  # None: all 19 test documents
            phases.append(evaluation_phase("subword", plan.text_suite, documents))
        sections = [
            (segmentation, segmentation.SCENES[size]),
            (text_classification, text_classification.SAMPLES[size]),
            (certification, certification.SAMPLES[size]),
        ]
        phases += [
            evaluation_phase(module.SUFFIX, module.SUITE, samples, models=2)
            for module, samples in sections
            if module.SUFFIX not in skipped
        ]
    return [*phases, *(Phase(kind, seconds) for kind, seconds in FIXED_S.items())]


def _other_sections(
    result: DemoResult,
    plan: DemoPlan,
    out_dir: Path,
    command: list[str],
    step: PhaseClock,
    progress: Progress | None,
) -> None:
    """The sections beyond the tour, into `result`; one an optional extra rules out
    (`result.skipped`) is left None (or without reports)."""
    from robench.cli._demo.bpe import bpe_model_folder, evaluate_bpe_demo

    evaluate_all = _evaluator(out_dir, command, step, progress)
    language_models = _language_models(plan, out_dir)
    text = evaluate_all(
        language_models, suite=plan.text_suite, suffix="-text", limit=plan.text_limit, batch_size=16
    )
    result.text_reports = text
    result.text_comparison = compared(text, ["perplexity", "bits_per_byte"])
    quick, skipped = plan is not PLANS["full"], result.skipped
    if "-subword" not in skipped:  # beside them: a subword (BPE) model
        if bpe_model_folder() is not None:  # else evaluate_bpe_demo says it is skipped
            step.start(f"subword language model: suite {plan.text_suite}")
        result.subword_reports = evaluate_bpe_demo(
            out_dir, plan.text_suite, quick=quick, command=command, progress=progress
        )
    if SEGMENTATION_SUFFIX not in skipped:
        step.start("segmentation: baseline vs Elliptical nano Segmenter")
        result.segmentation = evaluate_segmentation_demo(
            out_dir, quick=quick, command=command, progress=progress
        )
    if TEXT_CLASSIFICATION_SUFFIX not in skipped:
        step.start("text classification: baseline vs Elliptical nano classifier under attack")
        result.text_classification = evaluate_text_classification_demo(
            out_dir, quick=quick, command=command, progress=progress
        )
    # A table of its own: its token perplexity counts BPE tokens, not words, so it does not
    # compare with the word-level pair's, and its realised swap rate differs from theirs.
    if result.subword_reports:
        result.subword_comparison = compared(
            result.subword_reports, ["bits_per_byte", "perplexity"]
        )
    step.start("certification: noise-trained baseline vs Elliptical nano ViT, randomized smoothing")
    result.certification = evaluate_certification_demo(
        out_dir, quick=quick, command=command, progress=progress
    )


def _write_page(result: DemoResult, out_dir: Path) -> None:
    """`index.html` of every section the demo ran; their own figures join `result.figures`."""
    found = {
        "": (result.reports, result.comparison),
        "-corruptions": (result.corruption_reports, corruption_overview(result.corruption_reports)),
        "-text": (result.text_reports, result.text_comparison),
        "-subword": (result.subword_reports, result.subword_comparison),
    }
    for suffix, section in (
        (SEGMENTATION_SUFFIX, result.segmentation),
        (TEXT_CLASSIFICATION_SUFFIX, result.text_classification),
        (CERTIFICATION_SUFFIX, result.certification),
    ):
        if section is not None:
            found[suffix] = (section.reports, section.comparison)
    if result.segmentation is not None:
        result.figures += result.segmentation.figures
    if result.certification is not None and result.certification.figure is not None:
        result.figures.append(result.certification.figure)
    sections = [(INDEX_TITLES[k], reports, c) for k, (reports, c) in found.items() if c is not None]
    write_index(
        out_dir,
        sections,
        extra_figures=segmentation_figures(result.segmentation),
        about=section_notes(result.subword_reports),
    )


def corruption_overview(reports: list[tuple[Path, Report]]) -> Comparison:
    """The corruption section's leaderboard on the page: clean top-1 and the mean corruption
    accuracy, not a column per corruption x severity (46 in the full demo; see the heatmap)."""
    comparison = compared(reports, ["top1", "mean_corruption_accuracy"])
    kept = [c for c in comparison.columns if c.aggregate or c.perturbation == "clean"]
    if len(kept) == len(comparison.columns) or not kept:
        return comparison
    note = (
        f"{len(comparison.columns) - len(kept)} corruption x severity columns are in the "
        "heatmap below and in the reports; the table keeps clean top-1 and the mean over them."
    )
    return replace(comparison, columns=kept, notes=[*comparison.notes, note])


# Why the certification table's two accuracies differ (the page and the printed heading).
CERTIFIED_AT_ZERO = (
    "Clean top-1 is the base classifier's on the clean images; certified accuracy at radius 0 "
    "is the smoothed classifier's (the majority vote of the base classifier under Gaussian "
    "noise, an abstention counting as wrong). They are two classifiers, so they differ: a "
    "model fine-tuned under noise can be more accurate smoothed than alone."
)


def section_notes(subword: list[tuple[Path, Report]]) -> dict[str, str]:
    """Section title -> what the page says above its table instead of the suite's
    description, where that description would mislead."""
    notes = {INDEX_TITLES[CERTIFICATION_SUFFIX]: CERTIFIED_AT_ZERO}
    for _, report in subword:
        corpus, data = report.data.corpus or {}, report.data
        notes[INDEX_TITLES["-subword"]] = (
            f"Clean and Word Swap 2.5% ('AAA'), scored over whole test documents "
            f"({data.n_samples} of {data.n_total}), read in windows of at most "
            f"{corpus.get('max_length', '?')} BPE tokens; the suite's target length applies "
            "to the word-level models, not to this one."
        )
    return notes


# Report file suffix -> the title of its section on the index page.
INDEX_TITLES = {
    "": "Adversarial attacks",
    "-corruptions": "Common corruptions",
    "-text": "Language models under Word Swap",
    "-subword": "A subword language model (its own BPE tokenizer) under Word Swap",
    SEGMENTATION_SUFFIX: "Semantic segmentation: nano Segmenters on fashion scenes",
    TEXT_CLASSIFICATION_SUFFIX: "Text classification under DeepWordBug and PWWS",
    CERTIFICATION_SUFFIX: "Certified robustness: randomized smoothing at sigma 0.25",
}


def segmentation_figures(found: SegmentationDemo | None) -> dict[str, list[PageFigure]]:
    """Section title -> the overlay figure, inlined for the page."""
    if found is None or found.overlay is None:
        return {}
    from robench.results.compare.html.figures import inline_png

    alt = (
        "One fashion scene, its ground-truth mask and each Segmenter's predicted mask, one "
        "colour per class (legend at the right), over a greyed copy of the image."
    )
    figure = inline_png(found.overlay, "Ground truth and predicted masks of one scene", alt)
    return {INDEX_TITLES[SEGMENTATION_SUFFIX]: [figure]}
