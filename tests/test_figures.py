"""Figures: what each one shows (series, intervals, colours, labels), read off the Figure."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import timm
import torch
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from torch import nn

import robench.models.zoo  # noqa: F401  (registers the nano models with timm)
from robench._core.errors import ConfigError
from robench.cli._demo import _figures
from robench.diagnostics import build_diagnostic
from robench.diagnostics.attention_maps import attention_comparison_figure
from robench.models.normalization import NormalizedModel
from robench.results.plots.figures import (
    AccuracySeries,
    accuracy_series,
    accuracy_vs_eps_figure,
    architecture_label,
    collapse_figure,
    plot_accuracy_vs_eps,
    redundancy_figure,
)
from robench.results.report.schema import Report, read_report
from tests.report_factory import make_report

DEMO_REPORTS = Path(__file__).resolve().parents[1] / "reports" / "demo"
FMNIST_CLASSES = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
]


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _attack_report(model: str, shift: float = 0.0) -> Report:
    """A demo-like report: clean, FGSM and PGD-20 at 1/255 and 4/255, SPSA at 2/255 on 50."""
    accuracies = {
        "clean": 0.9,
        "fgsm-1": 0.8,
        "fgsm-4": 0.6,
        "pgd-1": 0.75,
        "pgd-4": 0.5,
        "spsa-2": 0.8,
    }
    params: dict[str, dict[str, Any]] = {
        "fgsm-1": {"eps": 1 / 255, "eps_display": "1/255"},
        "fgsm-4": {"eps": 4 / 255, "eps_display": "4/255"},
        "pgd-1": {"eps": 1 / 255, "steps": 20, "step_size": 0.25 / 255},
        "pgd-4": {"eps": 4 / 255, "steps": 20, "step_size": 1 / 255},
        "spsa-2": {"eps": 2 / 255, "max_samples": 50},
    }
    report = make_report(
        model,
        {name: acc - shift for name, acc in accuracies.items()},
        n=200,
        params=params,
        max_samples={"spsa-2": 50},
    )
    for result in report.results:
        result.kind = result.name.split("-")[0]
    return report


@pytest.fixture(scope="module")
def two_models() -> list[AccuracySeries]:
    return accuracy_series({"DeiT": _attack_report("deit"), "Elliptical": _attack_report("ell")})


# --- accuracy against eps ---------------------------------------------------------------------


def test_accuracy_series_one_per_model_and_attack_in_percent(
    two_models: list[AccuracySeries],
) -> None:
    keys = [(s.model, s.attack) for s in two_models]
    attacks = ["clean (ε = 0)", "FGSM", "PGD-20", "SPSA"]
    assert keys == [(m, a) for m in ("DeiT", "Elliptical") for a in attacks]
    report = _attack_report("deit")
    by_name = {r.name: r.metrics["top1"] for r in report.results}
    fgsm = next(s for s in two_models if s.model == "DeiT" and s.attack == "FGSM")
    assert fgsm.is_sweep and fgsm.kind == "fgsm" and fgsm.seed == 0
    assert [p.eps for p in fgsm.points] == [1 / 255, 4 / 255]
    for point, name in zip(fgsm.points, ["fgsm-1", "fgsm-4"], strict=True):
        assert point.percent == pytest.approx(100 * by_name[name].value)
        assert point.ci95 == pytest.approx(tuple(100 * v for v in by_name[name].ci95))
        assert point.ci95[0] < point.percent < point.ci95[1]
        assert point.n_samples == 200
    spsa = next(s for s in two_models if s.model == "DeiT" and s.attack == "SPSA")
    assert not spsa.is_sweep
    assert spsa.points[0].n_samples == 50
    assert spsa.points[0].percent == pytest.approx(80.0)


def test_accuracy_series_keeps_other_parameter_sets_apart() -> None:
    report = _attack_report("deit")
    extra = report.results[-2].model_copy(deep=True)  # pgd-4
    extra.name = "pgd-4-through-m"
    extra.params = {**extra.params, "differentiable_m": True}
    report.results.append(extra)
    attacks = [s.attack for s in accuracy_series({"m": report})]
    assert attacks == ["clean (ε = 0)", "FGSM", "PGD-20", "SPSA", "PGD-20 (pgd-4-through-m)"]


def _data_colours(fig: Figure) -> dict[str, set[str]]:
    """Legend-free label ("model: attack") -> colours of its line or error-bar marker."""
    ax = fig.axes[0]
    colours: dict[str, set[str]] = {}
    for line in ax.lines:
        if not line.get_label().startswith("_"):
            colours.setdefault(line.get_label(), set()).add(str(line.get_color()))
    for container in ax.containers:
        colours.setdefault(container.get_label(), set()).add(str(container.lines[0].get_color()))
    return colours


def test_accuracy_figure_one_colour_per_model_one_style_per_attack(
    two_models: list[AccuracySeries],
) -> None:
    fig = accuracy_vs_eps_figure(two_models, title="Accuracy under attack")
    ax = fig.axes[0]
    sweeps = [line for line in ax.lines if not line.get_label().startswith("_")]
    assert sorted(line.get_label() for line in sweeps) == [
        "DeiT: FGSM",
        "DeiT: PGD-20",
        "Elliptical: FGSM",
        "Elliptical: PGD-20",
    ]
    # Single-budget attacks and clean are markers with error bars.
    assert sorted(c.get_label() for c in ax.containers) == sorted(
        f"{m}: {a}" for m in ("DeiT", "Elliptical") for a in ("clean (ε = 0)", "SPSA")
    )
    colours = _data_colours(fig)
    per_model = {
        model: set().union(*(c for label, c in colours.items() if label.startswith(model)))
        for model in ("DeiT", "Elliptical")
    }
    assert all(len(c) == 1 for c in per_model.values())
    assert per_model["DeiT"] != per_model["Elliptical"]
    styles = {line.get_label().split(": ")[1]: set() for line in sweeps}
    for line in sweeps:
        styles[line.get_label().split(": ")[1]].add((line.get_linestyle(), line.get_marker()))
    assert all(len(s) == 1 for s in styles.values())
    assert styles["FGSM"] != styles["PGD-20"]
    # 95% intervals: one band per line.
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == len(sweeps)
    # Lines start at the model's clean accuracy; values in percent on a 0-100 axis.
    deit_fgsm = next(line for line in sweeps if line.get_label() == "DeiT: FGSM")
    assert list(deit_fgsm.get_ydata()) == pytest.approx([90.0, 80.0, 60.0])
    assert ax.get_ylim() == (0, 100)
    assert "%" in ax.get_ylabel()


def test_accuracy_figure_states_samples_seeds_and_intervals(
    two_models: list[AccuracySeries],
) -> None:
    fig = accuracy_vs_eps_figure(two_models, title="Top-1 under attack", note="extra line")
    ax = fig.axes[0]
    note = ax.get_title(loc="left")
    assert "n = 200 images per point" in note
    assert "SPSA: n = 50" in note
    assert "seed 0, one run per model" in note
    assert "extra line" in note
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    for entry in ("DeiT", "Elliptical", "FGSM", "PGD-20", "SPSA", "clean (ε = 0)"):
        assert entry in legend
    assert any("95% CI" in t for t in legend)
    assert fig.get_suptitle() == "Top-1 under attack"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1/255", "2/255", "4/255"]


def test_accuracy_figure_rejects_nothing_to_plot(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nothing to plot"):
        plot_accuracy_vs_eps([], tmp_path / "a.png")


def test_accuracy_png_is_deterministic(two_models: list[AccuracySeries], tmp_path: Path) -> None:
    first = plot_accuracy_vs_eps(two_models, tmp_path / "a.png").read_bytes()
    assert plot_accuracy_vs_eps(two_models, tmp_path / "b.png").read_bytes() == first


def test_demo_series_cover_every_attack_of_the_committed_reports() -> None:
    reports = [
        (role, read_report(DEMO_REPORTS / f"{role}.json")) for role in ("baseline", "elliptical")
    ]
    # The series the demo draws: one per (model, attack), the model named 'NAME (ROLE)'.
    series = accuracy_series({f"{report.model.name} ({role})": report for role, report in reports})
    for role, report in reports:
        mine = [s for s in series if s.model == f"{report.model.name} ({role})"]
        assert sum(len(s.points) for s in mine) == len(report.results)
        assert {s.attack for s in mine} == {
            "clean (ε = 0)",
            "FGSM",
            "PGD-20",
            "SPSA",
            "AutoAttack (lite)",
        }
    note = accuracy_vs_eps_figure(series).axes[0].get_title(loc="left")
    assert "n = 500 images per point; PGD-20: n = 250; SPSA, AutoAttack (lite): n = 50" in note


# --- per-layer diagnostics --------------------------------------------------------------------


def test_collapse_figure_bands_and_fixed_range() -> None:
    curves = {"DeiT": [0.5, 0.6, 0.7], "Elliptical": [0.4, 0.45, 0.5]}
    fig = collapse_figure(curves, spread={k: [0.1] * 3 for k in curves}, note="one seed")
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["DeiT", "Elliptical"]
    assert len({line.get_color() for line in ax.lines}) == 2
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 2
    assert ax.get_ylim() == (0.0, 1.0)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["DeiT", "Elliptical", "shaded: ± 1 std over images"]
    assert ax.get_title(loc="left") == "one seed"


def test_redundancy_figures_share_a_range_given_a_ceiling() -> None:
    low = redundancy_figure({"a": [0.5, 1.0]}, per_layer_std={"a": [0.1, 0.1]}, ymax=10.0)
    high = redundancy_figure({"b": [2.5, 3.0]}, per_layer_std={"b": [1.0, 1.0]}, ymax=10.0)
    assert low.axes[0].get_ylim() == high.axes[0].get_ylim() == (0.0, 10.0)
    assert redundancy_figure({"c": [2.0, 4.0]}).axes[0].get_ylim()[0] == 0.0
    fig = redundancy_figure({"a": [1.0]}, per_layer_std={"a": [0.2]}, std_label="± 1 std (x)")
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["a (mean ± 1 std (x))"]


@pytest.fixture(scope="module")
def nano() -> dict[str, nn.Module]:
    models = {}
    for name in ("vit_nano_patch4_28", "vit_nano_elliptical_patch4_28"):
        torch.manual_seed(0)
        models[name] = NormalizedModel(timm.create_model(name), (0.2860,), (0.3530,)).eval()
    return models


def test_architecture_label(nano: dict[str, nn.Module]) -> None:
    assert architecture_label(nano["vit_nano_patch4_28"].model) == "vit_nano_patch4_28"
    assert architecture_label(nn.Linear(2, 2)) == "Linear"


def _capture(monkeypatch: pytest.MonkeyPatch, name: str) -> list[dict[str, Any]]:
    """Record the arguments of robench.results.plots.figures.`name` instead of drawing."""
    calls: list[dict[str, Any]] = []

    def fake(data: Any, path: Path, **kwargs: Any) -> Path:
        calls.append({"data": data, "path": path, **kwargs})
        return path

    monkeypatch.setattr(f"robench.results.plots.figures.{name}", fake)
    return calls


def test_diagnostic_figures_name_the_model_and_explain_bars(
    nano: dict[str, nn.Module],
    fmnist_test: tuple[torch.Tensor, torch.Tensor],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    images = fmnist_test[0][:6]
    redundancy = _capture(monkeypatch, "plot_redundancy")
    collapse = _capture(monkeypatch, "plot_collapse_curves")
    for name, model in nano.items():
        build_diagnostic("head_redundancy", {}).run(model, images, out_dir=tmp_path)
        build_diagnostic("collapse", {}).run(model, images, out_dir=tmp_path, title=f"my {name}")
    assert [list(c["data"]) for c in redundancy] == [[name] for name in nano]
    for call in redundancy:
        assert call["ymax"] == pytest.approx(math.sqrt(2 * 50))  # 49 patches + CLS
        assert "std over 6 images × 6 head pairs" in call["std_label"]
        assert next(iter(call["data"])) in call["title"]
    assert [list(c["data"]) for c in collapse] == [[f"my {name}"] for name in nano]
    for call in collapse:
        assert list(call["spread"]) == list(call["data"])  # the band: +- 1 std over images
        assert "std over images" in call["note"] and "6 images" in call["note"]
        assert next(iter(call["data"])) in call["title"]


# --- attention maps ---------------------------------------------------------------------------


def test_attention_figure_title_colour_bar_classes_and_predictions(
    nano: dict[str, nn.Module], fmnist_test: tuple[torch.Tensor, torch.Tensor]
) -> None:
    images, labels = fmnist_test[0][:3], fmnist_test[1][:3].tolist()
    models = {
        "baseline": nano["vit_nano_patch4_28"],
        "elliptical": nano["vit_nano_elliptical_patch4_28"],
    }
    fig = attention_comparison_figure(models, images, labels=labels, class_names=FMNIST_CLASSES)
    assert fig.get_suptitle() == "CLS attention, last layer (layer 4 of 4), mean over 4 heads"
    assert len(fig.axes) == 3 * 3 + 1  # 3 rows x (image, 2 models) + the colour bar
    colour_bar = fig.axes[-1]
    assert "min-max scaled per map" in colour_bar.get_ylabel()
    grid = [fig.axes[i * 3 : i * 3 + 3] for i in range(3)]
    assert [ax.get_title() for ax in grid[0]] == ["image", "baseline", "elliptical"]
    for row, label in zip(grid, labels, strict=True):
        assert row[0].get_xlabel() == f"true: {FMNIST_CLASSES[label]}"
    for col, model in enumerate(models.values(), start=1):
        with torch.no_grad():
            predicted = model(images).argmax(dim=-1).tolist()
        for row, label, pred in zip(grid, labels, predicted, strict=True):
            text = row[col].get_xlabel()
            assert text.startswith(f"pred: {FMNIST_CLASSES[pred]}")
            assert text.endswith("✓") == (pred == label)


def test_attention_figure_checks_labels(
    nano: dict[str, nn.Module], fmnist_test: tuple[torch.Tensor, torch.Tensor]
) -> None:
    with pytest.raises(ConfigError, match="one label per image"):
        attention_comparison_figure(
            {"m": nano["vit_nano_patch4_28"]}, fmnist_test[0][:2], labels=[1]
        )


# --- the demo's figures and matplotlib's lazy import ---------------------------------------------


def test_demo_figures_from_the_committed_reports(tmp_path: Path, fashion_mnist_dir: Path) -> None:
    reports = [
        (role, read_report(DEMO_REPORTS / f"{role}.json")) for role in ("baseline", "elliptical")
    ]
    models = {
        "baseline": ("vit_nano_fmnist", None),
        "elliptical": ("vit_nano_elliptical_fmnist", None),
    }
    paths = _figures(models, reports, tmp_path)
    assert [p.name for p in paths] == [
        "attention_heatmaps.png",
        "collapse.png",
        "accuracy_vs_eps.png",
    ]
    for path in paths:
        assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_matplotlib_is_imported_only_to_draw() -> None:
    code = (
        "import sys, robench, robench.results.plots.figures, robench.diagnostics, "
        "robench.cli._demo; "
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported eagerly'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_one_attack_at_several_budgets_is_one_series_in_a_current_report() -> None:
    """Budget keys of schema 2+ (`budget_display`) must not split an attack's sweep."""
    report = read_report(Path(__file__).parents[1] / "reports" / "demo" / "baseline.json")
    series = {s.attack: s for s in accuracy_series({"m": report})}
    assert [round(p.eps * 255) for p in series["FGSM"].points] == [1, 4, 8]
    assert [round(p.eps * 255) for p in series["PGD-20"].points] == [4, 8]  # demo suite v2
