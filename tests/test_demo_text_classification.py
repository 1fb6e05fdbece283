"""The demo's text-classification step: both shipped classifiers' reports (clean, DeepWordBug,
PWWS) on the same paragraphs, their comparison, one successful attack shown per model, and
the page's section."""

from __future__ import annotations

from pathlib import Path

import pytest

from robench.cli._demo import INDEX_TITLES, write_index
from robench.cli._demo.text_classification import (
    SUFFIX,
    TextClassificationDemo,
    evaluate_text_classification_demo,
)

pytestmark = pytest.mark.slow  # two models x three results on a few paragraphs


@pytest.fixture(scope="module")
def step(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TextClassificationDemo]:
    out = tmp_path_factory.mktemp("tcdemo")
    found = evaluate_text_classification_demo(out, quick=True, command=["test"], limit=8)
    assert found is not None, "the shipped classifiers and WordNet are installed by make"
    return out, found


def test_writes_both_reports_on_the_same_paragraphs(step) -> None:
    _, found = step
    assert [path.name for path, _ in found.reports] == [
        f"{role}{SUFFIX}.json" for role in ("baseline", "elliptical")
    ]
    for _, report in found.reports:
        assert report.task == "text-classification"
        assert [r.name for r in report.results] == ["clean", "deepwordbug", "pwws"]
        attacked = next(r for r in report.results if r.name == "deepwordbug")
        assert "attack_success_rate" in attacked.metrics and attacked.n_samples == 8
    first, second = (report.datasets["default"] for _, report in found.reports)
    assert first.indices_sha256 == second.indices_sha256
    assert len(found.comparison.rows) == 2


def test_an_example_names_changed_words_and_the_wrong_class(step) -> None:
    _, found = step
    for example in found.examples:
        assert " -> " in example and " turned " in example and " into " in example


def test_the_page_has_the_section(step) -> None:
    out, found = step
    title = INDEX_TITLES[SUFFIX]
    page = write_index(out, [(title, found.reports, found.comparison)]).read_text()
    assert title in page and "attack_success_rate" in page
