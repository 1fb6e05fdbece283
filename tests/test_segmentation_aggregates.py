"""Mean mIoU under corruption (`mean_corruption_miou`): on a small real run its value is the
mean of the per-corruption mIoUs, its interval resamples images paired across corruptions,
the gate pairs it, and suites of the other task cannot ask for it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from robench._core.errors import ConfigError
from robench.evaluation.request import EvalRequest, evaluate
from robench.evaluation.suites import load_suite
from robench.results.gate.aggregates import paired_aggregate
from robench.results.report.schema import Report
from robench.results.stats.aggregate_samples import MIOU, bootstrap_accuracies, shared_block
from robench.results.stats.aggregates import compute_aggregates
from robench.results.stats.segmentation_metrics import as_counts, dataset_metrics

MODEL = "segmenter_nano_baseline"
SUITE = """
name = "seg-c-test"
version = 1
task = "semantic-segmentation"
aggregates = ["mean_corruption_miou"]

[[perturbations]]
kind = "clean"

[[perturbations]]
kind = "corruption"
corruptions = ["gaussian_noise", "contrast"]
severities = [1, 5]
"""


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import timm
    from safetensors.torch import save_file

    torch.manual_seed(1)
    path = tmp_path_factory.mktemp("weights") / "segmenter.safetensors"
    save_file(timm.create_model(MODEL).state_dict(), str(path))
    return path


def _run(tmp_path: Path, weights: Path, name: str) -> Report:
    suite = tmp_path / "seg-c.toml"
    suite.write_text(SUITE)
    request = EvalRequest(
        checkpoint=weights,
        suite=str(suite),
        data=None,  # fashion-scenes
        out=tmp_path / name,
        model=MODEL,
        limit=10,
        batch_size=4,
    )
    return evaluate(request)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, weights: Path) -> Report:
    return _run(tmp_path_factory.mktemp("segc"), weights, "r.json")


def test_value_is_the_mean_of_the_per_corruption_mious(report: Report) -> None:
    found = report.aggregate("mean_corruption_miou")
    assert found is not None and found.value is not None, found
    members = [r for r in report.results if r.kind == "corruption"]
    assert found.members == [r.name for r in members] and len(members) == 4
    mious = [r.metrics["miou"].value for r in members]
    assert found.value == pytest.approx(np.mean(mious), abs=1e-12)
    # Recomputed from the stored per-image counts (ratios of sums, not means of images).
    samples = report.samples["default"].values
    by_counts = [dataset_metrics(as_counts(samples[r.name]["miou"]))["miou"] for r in members]
    assert by_counts == pytest.approx(mious, abs=1e-12)
    # Per corruption: the mean over its two severities.
    for corruption in ("gaussian_noise", "contrast"):
        own = [r.metrics["miou"].value for r in members if r.params["corruption"] == corruption]
        assert found.details[corruption] == pytest.approx(np.mean(own), abs=1e-12)
    low, high = found.ci95 or (np.nan, np.nan)
    assert low <= found.value <= high and high - low > 0
    assert found.reason is None and found.higher_is_better


def test_bootstrap_draws_the_same_images_for_every_corruption(report: Report) -> None:
    members = [r for r in report.results if r.kind == "corruption"]
    block, _ = shared_block(report, "default", members + members[:1], MIOU) or (None, None)
    assert block is not None and block.values.shape == (5, 10, 4 * 11)
    # The first member again under another name: identical replicates only when each
    # replicate applies one draw of images to every row.
    block = replace(block, names=[*block.names[:4], "again"])
    boot = bootstrap_accuracies([block], n_boot=50, seed=3)
    first = boot[members[0].name]
    assert np.array_equal(first, boot["again"]) and not np.array_equal(first, boot[members[1].name])
    assert np.std(first) > 0
    again = compute_aggregates(report, ["mean_corruption_miou"], n_boot=200, seed=0)[0]
    assert again.ci95 == compute_aggregates(report, ["mean_corruption_miou"], n_boot=200)[0].ci95


def test_gate_pairs_it_and_a_run_with_itself_differs_by_zero(report: Report) -> None:
    stored = report.aggregate("mean_corruption_miou")
    assert stored is not None
    paired = paired_aggregate(report, report, stored, n_boot=200)
    assert not isinstance(paired, str), paired
    assert paired.difference == 0.0 and paired.ci95 == (0.0, 0.0)
    assert paired.baseline == pytest.approx(stored.value) and paired.n == 10


def test_suites_refuse_an_aggregate_of_another_task(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(SUITE.replace("mean_corruption_miou", "mean_corruption_accuracy"))
    with pytest.raises(ConfigError, match="reads image-classification results"):
        load_suite(str(wrong))
    classification = tmp_path / "cls.toml"
    classification.write_text(
        SUITE.replace('task = "semantic-segmentation"\n', "").replace("contrast", "fog")
    )
    with pytest.raises(ConfigError, match=r"mean_corruption_miou.*semantic-segmentation"):
        load_suite(str(classification))


def test_ade20k_c_declares_it() -> None:
    assert load_suite("ade20k-c").suite.aggregates == ("mean_corruption_miou",)
