"""The demo's page says what its tables show (issue 47): built-in data by name, scenes by
their count, no "best" in a one-row table, the corruption table condensed to clean and the
mean, the subword and certification sections explained, the iterations legend below."""

from __future__ import annotations

from pathlib import Path

from robench.cli._demo import (
    CERTIFICATION_SUFFIX,
    CERTIFIED_AT_ZERO,
    INDEX_TITLES,
    corruption_overview,
    section_notes,
)
from robench.results.compare.comparison import build_comparison
from robench.results.compare.html.leaderboard import leaderboard
from robench.results.compare.html.page import _dataset, build_section
from robench.results.plots.curves import iteration_figure
from robench.results.report.schema import Report, read_report

REPORTS = Path(__file__).resolve().parents[1] / "reports" / "demo"


def _pair(suffix: str) -> list[tuple[Path, Report]]:
    return [(REPORTS / f"{r}{suffix}.json", read_report(REPORTS / f"{r}{suffix}.json"))
            for r in ("baseline", "elliptical")]  # fmt: skip


def test_built_in_data_is_named_not_its_folder() -> None:
    (_, classification), _ = _pair("-text-classification")
    shown = _dataset(classification.data)
    assert shown.startswith("python-docs-sections (test): ") and "_sources" not in shown
    (_, segmentation), _ = _pair("-segmentation")
    scenes = _dataset(segmentation.data)
    assert "scenes composed of fashion-mnist images" in scenes and "10,000" not in scenes
    (_, images), _ = _pair("")
    assert _dataset(images.data).startswith("fashion-mnist (test): ")


def test_a_one_row_table_marks_nothing_best() -> None:
    path = REPORTS / "gpt2-bpe-text.json"
    one = build_comparison([(str(path), read_report(path))], metrics=["perplexity"])
    assert {cell.mark for row in leaderboard(one).rows for cell in row.cells} == {""}
    two = build_comparison([(str(p), r) for p, r in _pair("")], metrics=["top1"])
    assert "best" in {cell.mark for row in leaderboard(two).rows for cell in row.cells}


def test_the_corruption_table_keeps_clean_and_the_mean() -> None:
    pair = _pair("-corruptions")
    full = build_comparison([(str(p), r) for p, r in pair], metrics=["top1"])
    assert len(full.columns) == 46  # clean + 15 corruptions x 3 severities
    shown = corruption_overview(pair)
    assert [c.id for c in shown.columns] == ["clean/top1", "mean_corruption_accuracy"]
    assert "45 corruption x severity columns are in the heatmap" in shown.notes[-1]


def test_the_subword_and_certification_sections_say_what_they_show() -> None:
    path = REPORTS / "gpt2-bpe-text.json"
    notes = section_notes([(path, read_report(path))])
    subword = notes[INDEX_TITLES["-subword"]]
    assert "whole test documents" in subword and "target length 256" not in subword
    assert notes[INDEX_TITLES[CERTIFICATION_SUFFIX]] == CERTIFIED_AT_ZERO
    assert "radius 0" in CERTIFIED_AT_ZERO and "base classifier" in CERTIFIED_AT_ZERO


def test_the_iterations_legend_sits_below_the_axes() -> None:
    named = {f"{p.stem}": r for p, r in _pair("")}
    fig = iteration_figure(named)
    assert fig is not None
    legend = fig.axes[0].get_legend()
    assert legend is not None
    x, y = legend.get_bbox_to_anchor().transformed(fig.axes[0].transAxes.inverted()).p0
    assert y < 0 and x <= 0.01  # under the plot, from its left edge: the plot keeps its width


def test_a_section_s_about_can_be_replaced(tmp_path: Path) -> None:
    from robench.cli._demo import write_index

    pair = _pair("")
    comparison = build_comparison([(str(p), r) for p, r in pair], metrics=["top1"])
    page = write_index(tmp_path, [("T", pair, comparison)], about={"T": "what it shows"})
    assert "what it shows" in page.read_text()
    assert build_section([(p.name, r) for p, r in pair], comparison).about
