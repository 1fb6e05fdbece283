"""A plugin loaded with --import registers a perturbation kind and a metric that a suite uses:
plugins load before the suite is validated (issue 26)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robench.cli import app

PLUGIN = '''
from typing import ClassVar

from robench.perturbations.base import PerturbationParams, SamplePerturbation, register_kind
from robench.results.stats.metrics import Metric, MetricDisplay, register


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


@pytest.fixture(autouse=True)
def _forget_plugins() -> Iterator[None]:
    """Each test's plugin registers into process-wide registries; drop what it added (and
    its module) so later tests see robench's own catalogues, whatever order they run in."""
    from robench.perturbations.base import PERTURBATIONS
    from robench.results.stats.metrics import METRICS

    kinds, metrics, modules = set(PERTURBATIONS.names()), set(METRICS.names()), set(sys.modules)
    yield
    for name in set(PERTURBATIONS.names()) - kinds:
        PERTURBATIONS.unregister(name)
    for name in set(METRICS.names()) - metrics:
        METRICS.unregister(name)
    for name in set(sys.modules) - modules:
        if name.startswith("robench_user_"):
            del sys.modules[name]


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


def test_a_plugin_given_to_two_evaluations_in_one_process_registers_once(tmp_path: Path) -> None:
    from robench.evaluation.request import EvalRequest, evaluate
    from robench.results.stats.metrics import METRICS

    plugin = tmp_path / "twice.py"
    # The counter lives in a module the plugin imports, so it survives a second import.
    plugin.write_text(
        PLUGIN.replace("plugin_brighten", "plugin_brighten_2").replace(
            "plugin_error", "plugin_error_2"
        )
        + "import robench\nrobench._twice_runs = getattr(robench, '_twice_runs', 0) + 1\n"
    )
    suite = tmp_path / "suite.toml"
    suite.write_text(
        SUITE.replace("plugin_brighten", "plugin_brighten_2").replace(
            "plugin_error", "plugin_error_2"
        )
    )
    values = []
    for run in range(2):  # the second would raise "already registered" if it ran the file again
        request = EvalRequest(
            suite=str(suite),
            data="fashion-mnist",
            out=tmp_path / f"r{run}.json",
            model="vit_nano_fmnist",
            limit=8,
            batch_size=8,
            imports=(str(plugin),),
        )
        report = evaluate(request)
        values.append({r.name: r.metrics["plugin_error_2"].value for r in report.results})
    import robench

    assert robench.__dict__.pop("_twice_runs") == 1
    assert "plugin_error_2" in METRICS
    assert values[0] == values[1]


def test_a_plugin_that_failed_to_import_is_imported_again_once_fixed(tmp_path: Path) -> None:
    from robench._core.errors import ConfigError
    from robench._core.plugins import import_user_module
    from robench.results.stats.metrics import METRICS

    plugin = tmp_path / "broken.py"
    plugin.write_text("raise RuntimeError('not yet')\n")
    with pytest.raises(ConfigError, match="failed while importing"):
        import_user_module(str(plugin))
    plugin.write_text(
        PLUGIN.replace("plugin_brighten", "plugin_brighten_3").replace(
            "plugin_error", "plugin_error_3"
        )
    )
    import_user_module(str(plugin))
    import_user_module(str(plugin))  # a no-op, not a second registration
    assert "plugin_error_3" in METRICS
