"""docs/extending.md's plugins work: each file in examples/plugins/ adds one kind of thing
(a perturbation, a metric, a task, a model source, an output format, a dataset layout)
without touching robench's own files, and a real command uses it: `robench list ... --import`,
`robench eval ... --import --limit 8`, `robench compare --import ... --format NAME`,
`robench gate --import ... --output NAME=PATH`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robench.cli import app

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = ROOT / "examples" / "plugins"
DEMO = ROOT / "reports" / "demo"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _forget_plugins() -> Iterator[None]:
    """A plugin registers into process-wide registries: drop what each test added (and the
    plugin's module), so that other tests see robench's own catalogues."""
    import robench.results.compare.per_corruption  # robench's own formats first
    import robench.results.compare.tables
    import robench.results.gate.formats  # noqa: F401
    from robench.data import LAYOUTS
    from robench.models.sources.registry import SOURCES
    from robench.perturbations.base import PERTURBATIONS
    from robench.results.report.output_formats import OUTPUT_FORMATS
    from robench.results.stats.metrics import METRICS
    from robench.tasks.registry import TASKS

    registries = [PERTURBATIONS, METRICS, TASKS, SOURCES, *OUTPUT_FORMATS.values()]
    before = [set(r.names()) for r in registries]
    layouts, modules = dict(LAYOUTS), set(sys.modules)
    yield
    for registry, names in zip(registries, before, strict=True):
        for name in set(registry.names()) - names:
            registry.unregister(name)
    LAYOUTS.clear()
    LAYOUTS.update(layouts)
    for name in set(sys.modules) - modules:
        if name.startswith("robench_user_"):
            del sys.modules[name]


def _invoke(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _suite(tmp_path: Path, body: str, name: str = "plugin-suite") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\nversion = 1\n{body}')
    return path


def _report(args: list[str], out: Path) -> dict:  # type: ignore[type-arg]
    _invoke([*args, "--limit", "8", "-o", str(out), "--format", "json"])
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def _results(report: dict) -> dict:  # type: ignore[type-arg]
    return {r["name"]: r for r in report["results"]}


def test_every_example_plugin_is_shown_on_the_extending_page() -> None:
    page = (ROOT / "docs" / "extending.md").read_text()
    files = sorted(p.name for p in PLUGINS.glob("*.py"))
    assert len(files) >= 6
    missing = [name for name in files if f"examples/plugins/{name}" not in page]
    assert not missing, f"docs/extending.md does not show {missing}"


def test_a_plugin_perturbation_is_listed_and_runs_in_a_suite(tmp_path: Path) -> None:
    plugin = str(PLUGINS / "gamma_perturbation.py")
    listed = _invoke(["list", "perturbations", "gamma", "--import", plugin])
    assert listed.startswith("gamma\tgamma"), listed  # the kind and its parameter
    body = '[[perturbations]]\nkind = "clean"\n'
    body += '[[perturbations]]\nkind = "gamma"\nname = "same"\ngamma = 1.0\n'
    body += '[[perturbations]]\nkind = "gamma"\nname = "dark"\ngamma = 4.0\n'
    args = ["eval", "vit_nano_fmnist", "--suite", str(_suite(tmp_path, body)), "--import", plugin]
    results = _results(_report(args, tmp_path / "r.json"))
    assert results["dark"]["kind"] == "gamma" and results["dark"]["params"]["gamma"] == 4.0
    assert results["same"]["metrics"] == results["clean"]["metrics"]  # x ** 1 is x
    top1 = {name: r["metrics"]["top1"]["value"] for name, r in results.items()}
    assert top1["dark"] < top1["clean"]  # darkened 4x in gamma, the classifier is fooled


def test_a_plugin_metric_is_listed_and_reported(tmp_path: Path) -> None:
    plugin = str(PLUGINS / "top3_metric.py")
    assert "top3\t↑ top-3 accuracy" in _invoke(["list", "metrics", "--import", plugin])
    body = 'metrics = ["top1", "top3", "top5"]\n[[perturbations]]\nkind = "clean"\n'
    args = ["eval", "vit_nano_fmnist", "--suite", str(_suite(tmp_path, body)), "--import", plugin]
    report = _report(args, tmp_path / "r.json")
    metrics = _results(report)["clean"]["metrics"]
    values = [metrics[m]["value"] for m in ("top1", "top3", "top5")]
    assert values == sorted(values), values
    per_sample = report["samples"]["default"]["values"]["clean"]["top3"]
    assert len(per_sample) == 8 and sum(per_sample) / 8 == pytest.approx(values[1])


def test_a_plugin_task_is_listed_and_evaluated(tmp_path: Path) -> None:
    plugin = str(PLUGINS / "confidence_task.py")
    listed = _invoke(["list", "tasks", "--import", plugin])
    assert "image-confidence\t" in listed and "accuracy, confidence, overconfidence" in listed
    body = 'task = "image-confidence"\n[[perturbations]]\nkind = "clean"\n'
    args = ["eval", "vit_nano_fmnist", "--suite", str(_suite(tmp_path, body)), "--import", plugin]
    report = _report(args, tmp_path / "r.json")
    assert report["task"] == "image-confidence"
    metrics = {k: v["value"] for k, v in _results(report)["clean"]["metrics"].items()}
    assert set(metrics) == {"accuracy", "confidence", "overconfidence"}
    assert 0.1 < metrics["confidence"] <= 1.0  # a softmax maximum over 10 classes
    assert metrics["overconfidence"] == pytest.approx(metrics["confidence"] - metrics["accuracy"])
    # Its accuracy is image classification's top-1 on the same samples.
    classic = _suite(tmp_path, '[[perturbations]]\nkind = "clean"\n', "classic")
    plain = _report(["eval", "vit_nano_fmnist", "--suite", str(classic)], tmp_path / "p.json")
    assert metrics["accuracy"] == _results(plain)["clean"]["metrics"]["top1"]["value"]


def test_a_plugin_task_evaluates_a_model_held_in_memory() -> None:
    """The plugin's one file (its task, the data reader it inherits, its registration) is all
    `robench.evaluate(module, task=...)` needs: the module is wrapped as its task's models
    are (images), and the records are image classification's on the same samples."""
    import torch
    from torch import nn

    import robench

    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 10))
    images, labels = torch.rand(16, 1, 28, 28), torch.randint(0, 10, (16,))
    clean = [{"kind": "clean"}]
    plugin = str(PLUGINS / "confidence_task.py")
    suite = {"name": "confidence", "version": 1, "task": "image-confidence", "perturbations": clean}
    report = robench.evaluate(
        model, suite, (images, labels), task="image-confidence", imports=[plugin], progress=False
    )
    assert report.task == "image-confidence"
    assert len(report.samples["default"].targets) == 16
    result = report.results[0]
    metrics = {name: value.value for name, value in result.metrics.items()}
    assert set(metrics) == {"accuracy", "confidence", "overconfidence"}
    assert 0.1 <= metrics["confidence"] <= 1.0
    classic = robench.evaluate(model, clean, (images, labels), progress=False)
    assert metrics["accuracy"] == classic.results[0].metrics["top1"].value
    assert model.training  # the caller's model is left as it was


def test_a_plugin_model_source_loads_the_same_weights(tmp_path: Path) -> None:
    plugin = str(PLUGINS / "safetensors_source.py")
    assert "safetensors:\tmodel source" in _invoke(
        ["list", "models", "safetensors*", "--import", plugin]
    )
    suite = str(_suite(tmp_path, '[[perturbations]]\nkind = "clean"\n'))
    weights = ROOT / "models" / "vit_nano_fmnist.safetensors"
    model = f"safetensors:vit_nano_patch4_28@{weights}"
    sourced = _report(["eval", model, "--suite", suite, "--import", plugin], tmp_path / "s.json")
    card = _report(["eval", "vit_nano_fmnist", "--suite", suite], tmp_path / "c.json")
    assert sourced["model"]["source"]["source"] == "safetensors"
    assert sourced["model"]["checkpoint_sha256"] == card["model"]["checkpoint_sha256"]
    predictions = [
        r["samples"]["default"]["values"]["clean"]["prediction"] for r in (sourced, card)
    ]
    assert predictions[0] == predictions[1]


def test_a_plugin_output_format_is_chosen_by_name_and_by_suffix(tmp_path: Path) -> None:
    plugin = str(PLUGINS / "tsv_format.py")
    reports = [str(DEMO / "baseline.json"), str(DEMO / "elliptical.json")]
    assert "tsv\tcompare format, files .tsv" in _invoke(["list", "formats", "--import", plugin])
    text = _invoke(["compare", *reports, "--format", "tsv", "--import", plugin])
    header, *rows = [line.split("\t") for line in text.splitlines()]
    # The same columns and numbers as robench's csv format (4 decimals there, 2 here).
    csv_header, *csv_rows = [
        line.split(",") for line in _invoke(["compare", *reports, "-f", "csv"]).splitlines()
    ]
    assert header[1:] == csv_header[2:] and len(rows) == len(csv_rows) == 2
    for row, csv_row in zip(rows, csv_rows, strict=True):
        assert row[0] == csv_row[0]
        assert [float(v) for v in row[1:]] == pytest.approx(
            [float(v) for v in csv_row[2:]], abs=0.005
        )
    out = tmp_path / "table.tsv"  # the suffix picks the format
    _invoke(["compare", *reports, "--import", plugin, "-o", str(out)])
    assert out.read_text() == text


def test_a_plugin_report_format_is_chosen_by_eval(tmp_path: Path) -> None:
    plugin = str(PLUGINS / "tsv_format.py")
    out = tmp_path / "r.json"
    args = ["eval", "vit_nano_fmnist", "--suite", "smoke", "--limit", "8", "-o", str(out)]
    text = _invoke([*args, "--import", plugin, "--format", "tsv"])
    header, *rows = [line.split("\t") for line in text.splitlines()]
    assert header == ["result", "metric", "value", "ci_low", "ci_high"]
    report = json.loads(out.read_text())
    stored = {
        (r["name"], m): v["value"] for r in report["results"] for m, v in r["metrics"].items()
    }
    assert {(row[0], row[1]): float(row[2]) for row in rows} == pytest.approx(stored, abs=5e-5)
    # A name no one registered is refused as a choice, before anything runs.
    refused = runner.invoke(app, [*args, "--overwrite", "--format", "tvs"])
    assert refused.exit_code == 2 and "'tvs' is not one of" in refused.stderr


def test_a_plugin_gate_format_is_written_by_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hostile import refused
    from report_factory import flip, make_report, write

    from robench.results.gate.formats import GATE_FORMATS
    from robench.results.gate.policy import read_policy
    from robench.results.gate.regression import run_gate
    from robench.results.report.schema import read_report

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    plugin = str(PLUGINS / "tsv_format.py")
    baseline = make_report("base", {"clean": 0.8, "fgsm": 0.5}, n=200)
    base = write(baseline, tmp_path / "base.json")
    cand = write(flip(baseline, "fgsm", to_wrong=30), tmp_path / "cand.json")
    args = ["gate", "-b", str(base), "-c", str(cand)]
    out = tmp_path / "out" / "gate.tsv"
    # --import is read first wherever it stands, so --output may name the plugin's format.
    result = runner.invoke(app, [*args, "--output", f"tsv={out}", "--strict", "--import", plugin])
    assert result.exit_code == 1, result.output  # 15 pp off fgsm/top1: a regression
    gated = run_gate(read_report(base), read_report(cand), read_policy(None))
    assert out.read_text(encoding="utf-8") == GATE_FORMATS.get("tsv")(gated, True)
    header, *rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert header[0] == "check" and header[-1] == "status"
    checks = {row[0]: row for row in rows}
    assert set(checks) == {check.name for check in gated.checks}
    assert checks["fgsm/top1"][1:4] == ["0.5000", "0.3500", "0.1500"]
    assert checks["fgsm/top1"][-1] == "regressed" and checks["clean/top1"][-1] == "pass"
    # Refused before the gate runs, nothing written: a plugin's file over an input report, and
    # a name no one registered (with the close one the plugin has).
    args += ["--import", plugin]
    refused([*args, "--output", f"tsv={cand}"], tmp_path, f"--output {cand} is --candidate")
    line = refused([*args, "--output", f"tvs={tmp_path / 'x.tsv'}"], tmp_path, "'tvs' is not one")
    assert "(did you mean 'tsv'?)" in line


def test_a_plugin_dataset_layout_is_detected_and_read(tmp_path: Path) -> None:
    from PIL import Image

    from robench.data import Preprocessing, open_dataset

    fmnist = open_dataset("fashion-mnist", preprocessing=Preprocessing((1, 28, 28)))
    folder = tmp_path / "shoes-and-shirts"
    (folder / "img").mkdir(parents=True)
    rows = ["file,label"]
    for i in range(8):
        image, label = fmnist[i]
        pixels = (image[0] * 255).round().byte().numpy()  # IDX pixels are k/255: exact
        Image.fromarray(pixels, mode="L").save(folder / "img" / f"{i:04d}.png")
        rows.append(f"img/{i:04d}.png,{fmnist.classes[label]}")
    (folder / "labels.csv").write_text("\n".join(rows) + "\n")
    (folder / "classes.txt").write_text("\n".join(fmnist.classes) + "\n")  # the model's order
    suite = str(_suite(tmp_path, '[[perturbations]]\nkind = "clean"\n'))
    plugin = str(PLUGINS / "csv_dataset.py")
    args = ["eval", "vit_nano_fmnist", "--suite", suite, "--data", str(folder), "--limit", "8"]
    # Without the plugin the folder (no class folders) is no layout robench reads.
    assert runner.invoke(app, args).exit_code == 2
    report = _report([*args[:-2], "--import", plugin], tmp_path / "r.json")
    assert report["datasets"]["default"]["kind"] == "csv-labels"
    samples = report["samples"]["default"]
    assert sorted(samples["indices"]) == list(range(8))
    assert [samples["targets"][samples["indices"].index(i)] for i in range(8)] == [
        fmnist.targets[i] for i in range(8)
    ]
