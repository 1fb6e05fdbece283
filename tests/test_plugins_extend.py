"""A plugin loaded with --import registers a perturbation kind and a metric that a suite uses:
plugins load before the suite is validated (issue 26)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robench.cli import app

PLUGIN = '''
from typing import ClassVar

from robench.perturbations.base import PerturbationParams, SamplePerturbation, register_kind
from robench.results.metrics import Metric, MetricDisplay, register


class Brighten(SamplePerturbation):
    """Adds `shift` to every pixel, clamped to [0, 1] (no randomness)."""

    @property
    def seed_key(self):
        return f"brighten-{self.params.shift}"

    def perturb_sample(self, item, seed):
        return (item + self.params.shift).clamp(0.0, 1.0)


@register_kind("plugin_brighten", __name__ + ":Brighten")
class BrightenParams(PerturbationParams):
    unbounded: ClassVar[bool] = True
    shift: float


register(
    Metric(
        name="plugin_error",
        description="top-1 error (fraction of samples)",
        higher_is_better=False,
        per_sample=lambda record: record["y"] not in record["topk"][:1],
        display=MetricDisplay("error", scale=100.0, unit="%", diff_unit="pp"),
    )
)
'''

SUITE = """name = "plugin-suite"
version = 1
metrics = ["top1", "plugin_error"]

[[perturbations]]
kind = "clean"

[[perturbations]]
kind = "plugin_brighten"
name = "same"
shift = 0.0

[[perturbations]]
kind = "plugin_brighten"
name = "bright"
shift = 0.5
"""


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_a_plugin_registers_a_kind_and_a_metric_a_suite_uses(
    runner: CliRunner, tmp_path: Path
) -> None:
    plugin = tmp_path / "my_plugin.py"
    plugin.write_text(PLUGIN)
    suite = tmp_path / "plugin-suite.toml"
    suite.write_text(SUITE)
    report = tmp_path / "r.json"
    args = ["eval", "vit_nano_fmnist", "--suite", str(suite), "--import", str(plugin)]
    args += ["--limit", "32", "-b", "16", "-o", str(report), "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    data = json.loads(report.read_text())
    results = {r["name"]: r for r in data["results"]}
    assert results["bright"]["kind"] == "plugin_brighten"
    assert results["bright"]["params"]["shift"] == 0.5
    for r in results.values():  # the plugin's metric is the complement of top-1, per result
        metrics = r["metrics"]
        assert metrics["plugin_error"]["value"] == pytest.approx(1 - metrics["top1"]["value"])
        assert metrics["plugin_error"]["higher_is_better"] is False
    # A zero shift leaves the images as they are; half-white images fool the classifier.
    assert results["same"]["metrics"] == results["clean"]["metrics"]
    top1 = {name: r["metrics"]["top1"]["value"] for name, r in results.items()}
    assert top1["bright"] < top1["clean"]


def test_validate_reads_a_suite_after_loading_its_plugin(runner: CliRunner, tmp_path: Path) -> None:
    plugin = tmp_path / "my_plugin_v.py"
    plugin.write_text(
        PLUGIN.replace("plugin_brighten", "plugin_brighten_v").replace(
            "plugin_error", "plugin_error_v"
        )
    )
    suite = tmp_path / "plugin-suite.toml"
    suite.write_text(
        SUITE.replace("plugin_brighten", "plugin_brighten_v").replace(
            "plugin_error", "plugin_error_v"
        )
    )
    assert runner.invoke(app, ["validate", str(suite)]).exit_code == 2  # unknown without it
    result = runner.invoke(app, ["validate", str(suite), "--import", str(plugin)])
    assert result.exit_code == 0, result.stderr
