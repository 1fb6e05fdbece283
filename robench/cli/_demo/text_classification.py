"""The demo's text-classification section: baseline vs Elliptical nano classifier under
TextAttack's DeepWordBug and PWWS, on the python-docs-sections test split
(docs/text-classification.md), one successful attack per model shown. PWWS needs WordNet
(`make data`); without it, or without the checkpoints, the section is skipped with a warning.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from robench._core.errors import DataError
from robench._core.progress import Progress
from robench.cli._demo.pairs import cards_missing, compared, evaluate_roles
from robench.results.compare.comparison import Comparison
from robench.results.report.schema import Report

logger = logging.getLogger(__name__)

# Role -> the model card of the shipped checkpoint (models/*.toml); the one place to change.
DEMO_CLASSIFIERS = {
    "baseline": "text_classifier_nano_baseline_docs",
    "elliptical": "text_classifier_nano_elliptical_docs",
}
SUITE = "demo-text-classification"
SAMPLES = {"full": 64, "quick": 12}
SUFFIX = "-text-classification"  # report file names: baseline-text-classification.json
METRICS = ["top1", "attack_success_rate", "queries_mean"]


@dataclass
class TextClassificationDemo:
    reports: list[tuple[Path, Report]]
    comparison: Comparison
    # One line per model: a successful DeepWordBug attack, its changed words before -> after.
    examples: list[str] = field(default_factory=list)


def evaluate_text_classification_demo(
    out_dir: Path,
    *,
    quick: bool,
    command: list[str],
    progress: Progress | None = None,
    limit: int | None = None,
) -> TextClassificationDemo | None:
    """Both classifiers' reports and comparison; None without the checkpoints or WordNet."""
    if cards_missing(DEMO_CLASSIFIERS, "text-classification"):
        return None
    try:
        from robench.perturbations.text.wordnet import wordnet_dir

        wordnet_dir()
    except DataError as error:
        logger.warning("text-classification section skipped: %s", error)
        return None
    samples = limit or SAMPLES["quick" if quick else "full"]
    reports = evaluate_roles(
        out_dir, DEMO_CLASSIFIERS, suite=SUITE, suffix=SUFFIX, limit=samples, batch_size=64,
        command=command, progress=progress, unit="texts",
    )  # fmt: skip
    comparison = compared(reports, METRICS)
    examples = [
        _example(role, report) for role, (_, report) in zip(DEMO_CLASSIFIERS, reports, strict=True)
    ]
    return TextClassificationDemo(reports, comparison, [e for e in examples if e])


def _example(role: str, report: Report, attack: str = "deepwordbug") -> str | None:
    """The first successful attack's changed words, original -> perturbed."""
    from robench.data.text.labeled_texts import read_labeled_texts
    from robench.perturbations.text.word_spans import WordSpans

    samples = report.samples.get("default")
    columns = samples.values.get(attack, {}) if samples else {}
    outcomes = columns.get("outcome", [])
    if samples is None or "succeeded" not in outcomes:
        return None
    i = outcomes.index("succeeded")
    data = read_labeled_texts("python-docs-sections", "test")
    original = WordSpans.of(data.texts[samples.indices[i]])
    perturbed = WordSpans.of(columns["text"][i])
    changed = perturbed.changed_words(original)
    edits = ", ".join(f"{original.words[j]!r} -> {perturbed.words[j]!r}" for j in changed)
    before, after = data.classes[samples.targets[i]], data.classes[columns["prediction"][i]]
    return f"{role}: {edits} turned {before!r} into {after!r} ({len(original.words)} words)"
