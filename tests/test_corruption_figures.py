"""Corruption figures: heatmap cells, shared colour scale, severity means, files, read off the
Figure."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from robench._core.corruption_names import GROUP_OF
from robench.results.plots.corruptions import (
    accuracy_vs_severity_figure,
    corruption_grids,
    corruption_heatmap_figure,
    plot_corruption_figures,
)
from robench.results.report.schema import MetricValue, PerturbationResult, Report
from robench.results.stats.metrics import wilson_interval
from tests.report_factory import make_report

Cells = Mapping[tuple[str, int], float]
IMAGENET_C = list(GROUP_OF)[:15]
SUBSET = {("gaussian_noise", 1): 0.62, ("gaussian_noise", 3): 0.41, ("gaussian_noise", 5): 0.12}
SUBSET |= {("motion_blur", 1): 0.7, ("motion_blur", 3): 0.5, ("motion_blur", 5): 0.3}
SUBSET |= {("fog", 1): 0.66, ("fog", 3): 0.58, ("fog", 5): 0.44}
SUBSET |= {("jpeg_compression", 1): 0.71, ("jpeg_compression", 3): 0.65}
SUBSET |= {("jpeg_compression", 5): 0.505}


def _result(name: str, kind: str, params: dict[str, object], acc: float, n: int, dataset: str):
    k = round(acc * n)
    metric = MetricValue(value=k / n, ci95=wilson_interval(k, n), higher_is_better=True)
    return PerturbationResult(
        name=name,
        kind=kind,
        params=params,
        dataset=dataset,
        n_samples=n,
        metrics={"top1": metric},
        wall_time_s=1.0,
    )


def corruption_report(
    model: str,
    cells: Cells,
    *,
    clean: float | None = 0.8,
    n: int = 1000,
    dataset: str = "default",
    clean_dataset: str = "default",
) -> Report:
    """make_report's report with its results replaced: clean, then one per corruption cell."""
    results = []
    if clean is not None:
        results.append(_result("clean", "clean", {}, clean, n, clean_dataset))
    for (corruption, severity), acc in cells.items():
        params = {"corruption": corruption, "severity": severity}
        name = f"{corruption}-{severity}"
        results.append(_result(name, "corruption", params, acc, n, dataset))
    return make_report(model, {"clean": 0.8}, n=10).model_copy(update={"results": results})


def imagenet_c_cells(clean: float, robustness: float) -> dict[tuple[str, int], float]:
    """A plausible full 15 x 5 grid: accuracy falls with severity, faster for noise and blur."""
    hardness = {"noise": 0.17, "blur": 0.14, "weather": 0.1, "digital": 0.09, "extra": 0.1}
    cells = {}
    for i, corruption in enumerate(IMAGENET_C):
        slope = hardness[GROUP_OF[corruption]] * (1.0 - robustness) + 0.01 * (i % 3)
        for severity in range(1, 6):
            cells[(corruption, severity)] = max(0.01, clean - slope * severity - 0.02 * (i % 4))
    return cells


def _heatmaps(fig: Figure) -> list[Axes]:
    return [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]


def _cell_texts(ax: Axes) -> dict[tuple[int, int], str]:
    """(row, column) -> the text written on the cell."""
    return {
        (round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts
    }


def _note(fig: Figure) -> str:
    """The heatmap's note under the title, its lines joined."""
    return " ".join(fig.subfigs[0].get_suptitle().split())


# --- grids ------------------------------------------------------------------------------------


def test_grids_order_corruptions_and_find_the_clean_accuracy() -> None:
    cells = {("zebra", 1): 0.5, ("saturate", 2): 0.6, ("fog", 1): 0.4, ("aurora", 1): 0.3}
    report = corruption_report("m", cells, dataset="imagenet-c", clean_dataset="imagenet")
    (grid,) = corruption_grids({"m": report})
    assert grid.corruptions == ["fog", "saturate", "aurora", "zebra"]
    assert grid.severities == [1, 2]
    assert grid.dataset == "imagenet-c" and grid.clean_dataset == "imagenet"
    assert grid.clean is not None and grid.clean.percent == pytest.approx(80.0)
    assert grid.cells[("fog", 1)].n_samples == 1000


def test_no_corruption_results_means_no_figures(tmp_path: Path) -> None:
    reports = {"a": make_report("a")}
    assert corruption_grids(reports) == []
    assert corruption_heatmap_figure(reports) is None
    assert accuracy_vs_severity_figure(reports) is None
    assert plot_corruption_figures(reports, tmp_path, "x") == []
    assert list(tmp_path.iterdir()) == []


def test_grids_per_dataset_with_their_own_clean_accuracy() -> None:
    report = corruption_report("m", {("fog", 1): 0.5}, dataset="a-c", clean_dataset="a-c")
    other = corruption_report(
        "m", {("snow", 2): 0.4}, clean=0.9, dataset="b-c", clean_dataset="b-c"
    )
    report.results += other.results
    grids = corruption_grids({"m": report})
    assert [(g.dataset, g.clean_dataset, g.corruptions) for g in grids] == [
        ("a-c", None, ["fog"]),
        ("b-c", None, ["snow"]),
    ]
    assert [g.clean.percent for g in grids if g.clean] == pytest.approx([80.0, 90.0])
    fig = corruption_heatmap_figure({"m": report})
    assert fig is not None
    assert [ax.get_title().splitlines()[0] for ax in _heatmaps(fig)] == ["m · a-c", "m · b-c"]


# --- heatmap ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def subset_pair() -> dict[str, Report]:
    better = {key: acc + 0.04 for key, acc in SUBSET.items()}
    return {
        "DeiT": corruption_report("deit", SUBSET, clean=0.74, n=500),
        "Elliptical": corruption_report("ell", better, clean=0.75, n=500),
    }


def test_heatmap_writes_every_cell_in_percent_on_one_colour_scale(
    subset_pair: dict[str, Report],
) -> None:
    fig = corruption_heatmap_figure(subset_pair)
    assert fig is not None
    panels = _heatmaps(fig)
    assert len(panels) == 2
    rows = ["gaussian noise", "motion blur", "fog", "jpeg compression"]
    for ax, (model, report) in zip(panels, subset_pair.items(), strict=True):
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert labels == (rows if ax is panels[0] else ["", "", "", ""])  # names once per row
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "3", "5"]
        texts = _cell_texts(ax)
        assert len(texts) == len(ax.texts) == len(SUBSET)  # one annotation per cell
        for result in report.results[1:]:
            row = rows.index(result.params["corruption"].replace("_", " "))
            col = [1, 3, 5].index(result.params["severity"])
            assert texts[(row, col)] == f"{100 * result.metrics['top1'].value:.1f}"
        clean = report.results[0].metrics["top1"].value
        assert ax.get_title().startswith(f"{model}\nclean {100 * clean:.1f}%")
        (image,) = ax.images
        assert image.get_clim() == (0.0, 100.0)
        assert image.get_cmap().name == "viridis"
    assert _cell_texts(panels[0])[(0, 2)] == "12.0"
    assert _cell_texts(panels[0])[(3, 2)] == "50.4"  # round(0.505 * 500) = 252 of 500
    colour_bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(colour_bars) == 1
    assert colour_bars[0].get_ylabel() == "top-1 accuracy (%)"
    assert "n = 500 images per cell" in _note(fig)


def test_heatmap_text_contrasts_with_its_cell(subset_pair: dict[str, Report]) -> None:
    fig = corruption_heatmap_figure(subset_pair)
    assert fig is not None
    colours = {t.get_text(): t.get_color() for t in _heatmaps(fig)[0].texts}
    assert colours["12.0"] == "white"  # dark purple
    assert colours["71.0"] == "black"  # light green


def test_heatmap_wraps_after_two_panels_and_marks_missing_cells() -> None:
    full = {(c, s): 0.5 for c in ("fog", "snow") for s in (1, 2)}
    partial = {key: 0.3 for key in full if key != ("snow", 2)}
    reports = {
        "a": corruption_report("a", full),
        "b": corruption_report("b", full),
        "c": corruption_report("c", partial, clean=None),
    }
    fig = corruption_heatmap_figure(reports)
    assert fig is not None
    panels = _heatmaps(fig)
    assert len(panels) == 3
    boxes = [p.get_position() for p in panels]
    assert boxes[0].y0 == pytest.approx(boxes[1].y0) and boxes[2].y0 < boxes[0].y0
    assert boxes[2].x0 == pytest.approx(boxes[0].x0)
    assert _cell_texts(panels[2])[(0, 1)] == "–"  # snow (row 0: ImageNet-C order), severity 2
    # Panel means are over the cells every model has, so that they compare.
    assert "mean of cells 50.0%" in panels[0].get_title()
    assert panels[2].get_title() == "c\nmean of cells 30.0%"
    note = _note(fig)
    assert "–: not measured" in note and "cells every model has" in note


# --- accuracy against severity ---------------------------------------------------------------


def _main_axes(fig: Figure) -> Axes:
    (ax,) = [ax for ax in fig.axes if ax.get_legend() is not None]
    return ax


def _lines(ax: Axes) -> dict[str, tuple[list[float], list[float]]]:
    return {
        str(line.get_label()): (list(line.get_xdata()), list(line.get_ydata()))  # type: ignore[arg-type]
        for line in ax.lines
        if not str(line.get_label()).startswith("_")
    }


def test_severity_curve_is_the_mean_over_corruptions(subset_pair: dict[str, Report]) -> None:
    fig = accuracy_vs_severity_figure(subset_pair)
    assert fig is not None
    ax = _main_axes(fig)
    lines = _lines(ax)
    assert list(lines) == ["DeiT", "Elliptical"]
    xs, ys = lines["DeiT"]
    assert xs == [0, 1, 3, 5]
    # By hand: clean, then (gaussian noise + motion blur + fog + jpeg) / 4 at each severity.
    assert ys == pytest.approx([74.0, (62 + 70 + 66 + 71) / 4, (41 + 50 + 58 + 65) / 4, 34.1])
    assert lines["Elliptical"][1] == pytest.approx([75.0, 71.25, 57.5, 38.1])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["clean", "1", "3", "5"]
    assert ax.get_ylim() == (0.0, 100.0)
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2
    note = " ".join(ax.get_title(loc="left").split())
    assert "mean over the 4 corruptions measured for every model" in note
    assert "mean of the per-corruption interval endpoints" in note
    assert "n = 500 images per corruption and severity" in note
    # One small panel per corruption, in ImageNet-C order, one line per model.
    small = [a for a in fig.axes if a is not ax]
    titles = ["gaussian noise", "motion blur", "fog", "jpeg compression"]
    assert [a.get_title() for a in small] == titles
    fog = _lines(small[2])
    assert list(fog) == ["DeiT", "Elliptical"]
    assert fog["DeiT"] == ([0, 1, 3, 5], pytest.approx([74.0, 66.0, 58.0, 44.0]))


def test_severity_means_leave_out_cells_only_some_models_have() -> None:
    cells = {("fog", 1): 0.5, ("snow", 1): 0.3}
    reports = {
        "a": corruption_report("a", cells),
        "b": corruption_report("b", {**cells, ("saturate", 1): 0.9}),
    }
    fig = accuracy_vs_severity_figure(reports)
    assert fig is not None
    ax = _main_axes(fig)
    assert [ys for _, ys in _lines(ax).values()] == [pytest.approx([80.0, 40.0])] * 2
    assert "left out" in ax.get_title(loc="left")
    assert len(fig.axes) == 1 + 3


def test_one_corruption_draws_no_small_multiples() -> None:
    fig = accuracy_vs_severity_figure({"m": corruption_report("m", {("fog", 3): 0.5})})
    assert fig is not None
    (ax,) = fig.axes
    assert _lines(ax)["m"] == ([0, 3], pytest.approx([80.0, 50.0]))
    assert "mean" not in ax.get_ylabel()


# --- files ------------------------------------------------------------------------------------


def test_files_are_pngs_named_after_the_stem_and_deterministic(
    subset_pair: dict[str, Report], tmp_path: Path
) -> None:
    paths = plot_corruption_figures(subset_pair, tmp_path / "a", "demo")
    assert [p.name for p in paths] == [
        "demo-corruptions-heatmap.png",
        "demo-corruptions-severity.png",
    ]
    again = plot_corruption_figures(subset_pair, tmp_path / "b", "demo")
    for first, second in zip(paths, again, strict=True):
        data = first.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        assert second.read_bytes() == data
        assert b"matplotlib" not in data  # no version in the metadata


def test_full_grid_of_two_models_draws(tmp_path: Path) -> None:
    reports = {
        "DeiT": corruption_report("d", imagenet_c_cells(0.8, 0.0), clean=0.8),
        "Elliptical": corruption_report("e", imagenet_c_cells(0.8, 0.3), clean=0.8),
    }
    heatmap = corruption_heatmap_figure(reports)
    assert heatmap is not None
    assert all(len(ax.texts) == 15 * 5 for ax in _heatmaps(heatmap))
    severity = accuracy_vs_severity_figure(reports)
    assert severity is not None and len(severity.axes) == 1 + 15


def test_matplotlib_is_imported_only_to_draw() -> None:
    code = (
        "import sys, robench.results.plots.corruptions; "
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported eagerly'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_figure_order_is_the_perturbation_catalogue_order() -> None:
    """The figures' table repeats the corruption catalogue (results/ may not import
    perturbations/): same names, same order, same families."""
    from robench.perturbations.corruptions import ALL, EXTRA, GROUPS

    assert list(GROUP_OF) == list(ALL)
    expected = {name: group for group, names in GROUPS.items() for name in names}
    expected |= dict.fromkeys(EXTRA, "extra")
    assert expected == GROUP_OF
