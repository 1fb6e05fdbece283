"""The semantic-segmentation task end to end: records equal a plain forward pass scored with
mmsegmentation's counts, metrics are ratios of their sums, attacks and corruptions run, the
gate pairs images, and what does not fit is refused in one sentence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from robench._core.errors import ConfigError, DataError
from robench.data.segmentation.label_maps import logits_at_labels, pad_label_maps
from robench.data.segmentation.scenes import FashionScenes
from robench.evaluation.request import EvalRequest, evaluate
from robench.models.loading import load_model
from robench.results.stats.segmentation_metrics import dataset_metrics, pixel_counts

MODEL = "segmenter_nano_baseline"


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seeded random weights in a safetensors file (a model nobody tuned)."""
    import timm
    from safetensors.torch import save_file

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("weights") / "segmenter.safetensors"
    save_file(timm.create_model(MODEL).state_dict(), str(path))
    return path


@pytest.fixture(scope="module")
def report_and_request(tmp_path_factory: pytest.TempPathFactory, weights: Path):
    out = tmp_path_factory.mktemp("seg") / "r.json"
    request = EvalRequest(
        checkpoint=weights,
        suite="segmentation-smoke",
        data=None,
        out=out,
        model=MODEL,
        limit=12,
        batch_size=5,  # batches of 5, 5 and 2: records must not depend on it
    )
    return evaluate(request), request


def _plain_counts(indices: list[int], weights: Path) -> np.ndarray:
    """The counts of a plain forward pass of the same model on the same scenes."""
    loaded = load_model(MODEL, checkpoint=weights)
    scenes = FashionScenes(split="test", image_size=(64, 64))
    items = [scenes[i] for i in indices]
    images = torch.stack([image for image, _ in items])
    labels = pad_label_maps([label_map for _, label_map in items])
    with torch.no_grad():
        logits = loaded.model(images)
    rows = [
        pixel_counts(sample.argmax(0), label_map, logits.shape[1])
        for sample, label_map in zip(logits_at_labels(logits, labels), labels, strict=True)
    ]
    return np.stack(rows)


def test_clean_records_equal_a_plain_forward_pass(report_and_request, weights: Path) -> None:
    report, _ = report_and_request
    assert report.task == "semantic-segmentation"
    samples = next(iter(report.samples.values()))
    stored = np.asarray(samples.values["clean"]["miou"]).reshape(len(samples.indices), 4, -1)
    expected = _plain_counts(samples.indices, weights)
    np.testing.assert_array_equal(stored, expected)
    clean = next(r for r in report.results if r.name == "clean").metrics
    for name, value in dataset_metrics(expected).items():
        assert clean[name].value == pytest.approx(value)


def test_every_entry_runs_and_attacks_lower_miou(report_and_request) -> None:
    report, _ = report_and_request
    miou = {r.name: r.metrics["miou"] for r in report.results}
    assert set(miou) == {"clean", "fgsm", "pgd-5", "gaussian_noise-3", "fog-3"}
    assert miou["pgd-5"].value < miou["clean"].value
    for result in report.results:
        for value in result.metrics.values():
            assert value.ci95[0] <= value.value <= value.ci95[1]


def test_gate_pairs_a_report_with_itself(report_and_request, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from robench.cli import app

    _, request = report_and_request
    # Wide enough for the table with the test column (a narrow pipe drops it, tables.py).
    found = CliRunner().invoke(
        app,
        ["gate", "--baseline", str(request.out), "--candidate", str(request.out)],
        env={"COLUMNS": "200"},
    )
    assert found.exit_code == 0, found.output
    assert "paired bootstrap over images" in found.output


def test_model_declares_its_task() -> None:
    assert load_model(MODEL).task == "semantic-segmentation"


def test_classifier_under_a_segmentation_suite_is_refused(tmp_path: Path) -> None:
    request = EvalRequest(
        suite="segmentation-smoke",
        data=None,
        out=tmp_path / "r.json",
        model="test_convnext",  # timm's tiny RGB classifier
        allow_random_weights=True,
    )
    # A network that names no task is asked the suite's; its (B, 10) outputs are refused.
    with pytest.raises(DataError, match=r"not per-pixel logits \(B, K, H, W\)"):
        evaluate(request)
    assert not (tmp_path / "r.json").exists()


def test_a_plugin_network_that_names_no_task_takes_the_suites(tmp_path: Path) -> None:
    """A timm @register_model returning (B, K, H, W) logits, without `robench_task`."""
    plugin = tmp_path / "seg_plugin.py"
    plugin.write_text(
        "import torch\nfrom timm.models import register_model\n\n"
        "class Pixelwise(torch.nn.Module):\n"
        "    def __init__(self, num_classes=11, **kwargs):\n"
        "        super().__init__()\n"
        "        self.head = torch.nn.Conv2d(3, num_classes, 3, padding=1)\n"
        "        self.pretrained_cfg = {'input_size': (3, 64, 64), 'mean': (0.5,) * 3,\n"
        "                               'std': (0.5,) * 3}\n"
        "    def forward(self, x):\n"
        "        return self.head(x)\n\n"
        "@register_model\n"
        "def pixelwise_plugin_net(pretrained=False, **kwargs):\n"
        "    return Pixelwise(**kwargs)\n"
    )
    request = EvalRequest(
        suite="segmentation-smoke",
        data=None,
        out=tmp_path / "r.json",
        model="pixelwise_plugin_net",
        imports=(str(plugin),),
        limit=4,
        allow_random_weights=True,
    )
    report = evaluate(request)
    assert report.task == "semantic-segmentation"
    assert 0 <= report.results[0].metrics["miou"].value <= 1


def test_autoattack_in_a_segmentation_suite_is_refused(tmp_path: Path) -> None:
    from robench.evaluation.suites import load_suite

    suite = tmp_path / "aa.toml"
    suite.write_text(
        'name = "aa"\nversion = 1\ntask = "semantic-segmentation"\n'
        '[[perturbations]]\nkind = "autoattack"\neps = "4/255"\n'
    )
    with pytest.raises(ConfigError, match="applies to image-classification models"):
        load_suite(str(suite))


def test_segpgd_loss_on_class_labels_is_refused() -> None:
    from robench.perturbations.adversarial.params import PGDParams
    from robench.perturbations.adversarial.torchattacks_attacks import PGD

    attack = PGD(PGDParams(eps=4 / 255, steps=2, loss="segpgd"))
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 3))
    with pytest.raises(ConfigError, match="label maps"):
        attack.perturb(model, torch.rand(2, 3, 2, 2), torch.tensor([0, 1]), seed=0)


def test_class_map_is_refused(tmp_path: Path) -> None:
    mapping = tmp_path / "map.json"
    mapping.write_text("{}")
    request = EvalRequest(
        suite="segmentation-smoke",
        data=None,
        out=tmp_path / "r.json",
        model=MODEL,
        class_map=mapping,
        allow_random_weights=True,
    )
    with pytest.raises(DataError, match="--class-map"):
        evaluate(request)
