"""The demo's segmentation step: both Segmenters' reports (with the mean mIoU under
corruption), the overlay figure of one scene, and the section of the demo's page."""

from __future__ import annotations

import json

import jsonschema
import pytest

from robench.cli._demo import INDEX_TITLES, segmentation_figures, write_index
from robench.cli._demo.segmentation import (
    DEMO_SEGMENTERS,
    OVERLAY,
    SUFFIX,
    demo_segmenters,
    evaluate_segmentation_demo,
)
from robench.models.spec import bundled_cards
from robench.results.report.schema import report_json_schema

SCENES = 3  # a few scenes: the step's outputs, not its numbers
pytestmark = pytest.mark.slow  # about a minute: 2 models x 19 results, however few scenes


@pytest.fixture(scope="module")
def step(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("segdemo")
    # Random weights stand in for the shipped checkpoints until they exist (development).
    found = evaluate_segmentation_demo(
        out, quick=True, command=["test"], allow_random_weights=True, limit=SCENES
    )
    assert found is not None
    return out, found


def test_writes_both_reports_with_the_aggregate(step) -> None:
    _, found = step
    schema = report_json_schema()
    assert [path.name for path, _ in found.reports] == [
        f"{role}{SUFFIX}.json" for role in ("baseline", "elliptical")
    ]
    for path, report in found.reports:
        jsonschema.validate(json.loads(path.read_text()), schema)
        assert report.suite.name == "demo-segmentation" and report.task == "semantic-segmentation"
        names = [r.name for r in report.results]
        assert names[0] == "clean" and {"pgd-5-1", "pgd-5-2", "pgd-5-4"} <= set(names)
        assert sum(r.kind == "corruption" for r in report.results) == 15
        aggregate = report.aggregate("mean_corruption_miou")
        assert aggregate is not None and aggregate.value is not None
        assert all(r.n_samples == SCENES for r in report.results)
    # Both models saw the same scenes, so their rows compare.
    first, second = (report.datasets["default"] for _, report in found.reports)
    assert first.indices_sha256 == second.indices_sha256
    assert found.comparison.rows and len(found.comparison.rows) == 2


def test_draws_the_overlay_figure(step) -> None:
    out, found = step
    assert found.figures == [out / OVERLAY]
    assert (out / OVERLAY).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    axes = found.overlay.axes
    titles = [ax.get_title() for ax in axes]
    assert titles[:2] == ["image", "ground truth"] and len(titles) == 4
    assert titles[2].startswith("baseline\n") and titles[3].startswith("elliptical\n")
    assert "mIoU" in titles[2] and found.overlay.legends  # one legend of the classes


def test_the_page_has_the_section_with_its_figures(step) -> None:
    out, found = step
    section = (INDEX_TITLES[SUFFIX], found.reports, found.comparison)
    page = write_index(out, [section], extra_figures=segmentation_figures(found)).read_text()
    assert INDEX_TITLES[SUFFIX] in page
    assert "Ground truth and predicted masks of one scene" in page
    assert "mIoU against the L∞ budget" in page and "mIoU per corruption and severity" in page
    assert page.count("data:image/png;base64,") >= 3


def test_without_checkpoints_the_section_is_skipped_unless_allowed() -> None:
    if all(card in bundled_cards() for card in DEMO_SEGMENTERS.values()):
        assert demo_segmenters(False) == DEMO_SEGMENTERS
    else:
        assert demo_segmenters(False) is None
        assert demo_segmenters(True) == {
            "baseline": "segmenter_nano_baseline",
            "elliptical": "segmenter_nano_elliptical",
        }
