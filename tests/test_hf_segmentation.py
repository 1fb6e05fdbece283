"""transformers semantic-segmentation folders (`hf:`, AutoModelForSemanticSegmentation).

The judge: robench's per-image predictions on the built-in scenes equal a plain
`model(**processor(images))`, its logits upsampled bilinearly to the label map and argmaxed,
as transformers' `post_process_semantic_segmentation` does. The models are a tiny SegFormer with
random weights, whose native output is a quarter of its input (16x16 for 64x64 images), so the
resizing to the labels is exercised, and a tiny UperNet (ConvNeXt backbone), whose logits are
at the input size. Nothing is downloaded.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PIL import Image
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench.cli import app
from robench.data.segmentation.scenes import SCENE_CLASSES, FashionScenes
from robench.models.loading import load_model
from robench.models.sources.hf_segmentation import segmentation_preprocessing
from robench.models.sources.hf_tasks import SEMANTIC_SEGMENTATION, transformers_task
from robench.results.stats.segmentation_metrics import pixel_counts

transformers = pytest.importorskip("transformers", reason="the optional extra robench[hf]")

COMMIT = "89abcdef0123456789abcdef0123456789abcdef"
N_CLASSES = len(SCENE_CLASSES)  # 11: background and Fashion-MNIST's 10 garments


def _segformer(labels: dict) -> torch.nn.Module:
    """Logits at a quarter of the input (SegFormer's all-MLP decoder)."""
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    config = SegformerConfig(
        num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16],
        patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
        decoder_hidden_size=16, **labels,
    )  # fmt: skip
    return SegformerForSemanticSegmentation(config)


def _upernet(labels: dict) -> torch.nn.Module:
    """Logits at the input size (UperNet upsamples inside), a ConvNeXt backbone."""
    from transformers import ConvNextConfig, UperNetConfig, UperNetForSemanticSegmentation

    stages = ["stage1", "stage2", "stage3", "stage4"]
    backbone = ConvNextConfig(hidden_sizes=[8, 16, 24, 32], depths=[1] * 4, out_features=stages)
    config = UperNetConfig(
        backbone_config=backbone, hidden_size=16, use_auxiliary_head=False, **labels
    )
    return UperNetForSemanticSegmentation(config)


# family -> (builder, side of its logits for a 64x64 input)
FAMILIES = {"segformer": (_segformer, 16), "upernet": (_upernet, 64)}


def _save_model(folder: Path, labels: list[str], family: str = "segformer") -> torch.nn.Module:
    from transformers import SegformerImageProcessor

    torch.manual_seed(0)
    named = {"num_labels": len(labels), "id2label": dict(enumerate(labels)),
             "label2id": {n: i for i, n in enumerate(labels)}}  # fmt: skip
    model = FAMILIES[family][0](named).eval()
    model.save_pretrained(folder)
    SegformerImageProcessor(size={"height": 64, "width": 64}).save_pretrained(folder)
    return model


@pytest.fixture(scope="module")
def segformer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    folder = tmp_path_factory.mktemp("segformer")
    return folder, _save_model(folder, list(SCENE_CLASSES))


@pytest.fixture(scope="module")
def scenes(fashion_mnist_dir: Path) -> FashionScenes:
    return FashionScenes(split="test", root=fashion_mnist_dir)


def _plain_predictions(
    folder: Path, model: torch.nn.Module, scenes: FashionScenes, indices: list[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """(predictions, labels), both (B, 64, 64): the processor, the model and transformers'
    post-processing (logits upsampled bilinearly to the label size, argmax)."""
    from transformers import AutoImageProcessor

    pictures, labels = [], []
    for index in indices:
        image, label_map = scenes.scene(index)
        pictures.append(Image.fromarray((image * 255).round().astype(np.uint8)))
        labels.append(torch.from_numpy(label_map))
    processor = AutoImageProcessor.from_pretrained(folder)
    with torch.no_grad():
        outputs = model(**processor(pictures, return_tensors="pt"))
    sizes = [tuple(label_map.shape) for label_map in labels]
    maps = processor.post_process_semantic_segmentation(outputs, target_sizes=sizes)
    return torch.stack(maps), torch.stack(labels)


@pytest.mark.parametrize("family", FAMILIES)
def test_predictions_equal_the_processor_model_and_post_processing(
    family: str, scenes: FashionScenes, tmp_path: Path
) -> None:
    from robench.data.segmentation.label_maps import logits_at_labels

    folder = tmp_path / family
    model = _save_model(folder, list(SCENE_CLASSES), family)
    loaded = load_model(f"hf:{folder}")
    assert loaded.task == SEMANTIC_SEGMENTATION and loaded.spec.classes == list(SCENE_CLASSES)
    assert loaded.preprocessing is not None
    assert loaded.preprocessing.input_size == (3, 64, 64)
    indices = list(range(8))
    images = torch.stack([scenes[i][0] for i in indices])
    expected, labels = _plain_predictions(folder, model, scenes, indices)
    with torch.no_grad():
        logits = loaded.model(images)
    side = FAMILIES[family][1]
    assert logits.shape == (8, N_CLASSES, side, side)  # no upsampling before the task's
    predicted = torch.stack([x.argmax(0) for x in logits_at_labels(logits, labels)])
    assert torch.equal(predicted, expected)
    assert len(expected.unique()) > 1  # a model predicting one class would prove little


def test_logits_are_resized_once_to_labels_of_another_size(
    segformer: tuple[Path, torch.nn.Module], scenes: FashionScenes
) -> None:
    """Labels at 40x52 (ADE20K's maps keep their size while images are resized): one bilinear
    resize from the model's 16x16, as transformers' post-processing does, not two."""
    from transformers import AutoImageProcessor

    from robench.data.segmentation.label_maps import logits_at_labels

    folder, model = segformer
    images = torch.stack([scenes[i][0] for i in range(4)])
    processor = AutoImageProcessor.from_pretrained(folder)
    with torch.no_grad():
        logits = load_model(f"hf:{folder}").model(images)
        outputs = model(
            pixel_values=processor(images, do_rescale=False, return_tensors="pt").pixel_values
        )
    labels = torch.zeros(4, 40, 52, dtype=torch.int64)
    ours = torch.stack([x.argmax(0) for x in logits_at_labels(logits, labels)])
    theirs = processor.post_process_semantic_segmentation(outputs, target_sizes=[(40, 52)] * 4)
    assert torch.equal(ours, torch.stack(theirs))


def test_eval_with_the_segmentation_smoke_suite_scores_the_plain_predictions(
    segformer: tuple[Path, torch.nn.Module], scenes: FashionScenes, tmp_path: Path
) -> None:
    folder, model = segformer
    out = tmp_path / "r.json"
    args = ["eval", f"hf:{folder}", "--suite", "segmentation-smoke", "--limit", "8"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["model"]["task"] == SEMANTIC_SEGMENTATION
    assert report["model"]["source"]["library"] == "transformers"
    samples = report["samples"]["default"]
    expected, labels = _plain_predictions(folder, model, scenes, samples["indices"])
    pairs = zip(expected, labels, strict=True)
    counts = [pixel_counts(p, y, N_CLASSES).reshape(-1).tolist() for p, y in pairs]
    assert samples["values"]["clean"]["miou"] == counts  # (4, K) pixel counts per image
    attacked = next(r for r in report["results"] if r["name"] == "pgd-5")
    clean = next(r for r in report["results"] if r["name"] == "clean")
    accuracy = {r["name"]: r["metrics"]["pixel_accuracy"]["value"] for r in (clean, attacked)}
    assert accuracy["pgd-5"] < accuracy["clean"]


def test_a_segformer_loads_offline_from_the_hub_cache(
    segformer: tuple[Path, torch.nn.Module], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("robench tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    repo_dir = tmp_path / "hub" / "models--acme--tiny-segformer"
    shutil.copytree(segformer[0], repo_dir / "snapshots" / COMMIT)
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(COMMIT)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    loaded = load_model("hf:acme/tiny-segformer")
    assert loaded.task == SEMANTIC_SEGMENTATION and loaded.origin is not None
    assert (loaded.origin.location, loaded.origin.commit) == ("acme/tiny-segformer", COMMIT)
    with torch.no_grad():
        assert loaded.model(torch.rand(1, 3, 64, 64)).shape == (1, N_CLASSES, 16, 16)


@pytest.mark.parametrize(
    "config",
    [
        {"model_type": "segformer", "architectures": ["SegformerForSemanticSegmentation"]},
        {"model_type": "upernet", "architectures": ["UperNetForSemanticSegmentation"]},
        {"model_type": "x", "auto_map": {"AutoModelForSemanticSegmentation": "m.M"}},
    ],
)
def test_segmentation_configs_are_the_segmentation_task(config: dict) -> None:
    assert transformers_task(config, "config.json", trust_remote_code=True) == SEMANTIC_SEGMENTATION


def test_a_segmentation_model_under_a_classification_suite_is_refused(
    segformer: tuple[Path, torch.nn.Module], tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    args = ["eval", f"hf:{segformer[0]}", "-s", "smoke", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "semantic-segmentation" in result.output, result.output
    assert not out.exists()


def test_a_model_with_other_classes_than_the_data_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "five"
    _save_model(folder, ["a", "b", "c", "d", "e"])
    args = ["eval", f"hf:{folder}", "-s", "segmentation-smoke", "--limit", "2"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "r.json")])
    assert result.exit_code == 2, result.output
    assert "11 classes but the model predicts 5" in result.output
    assert "num_labels=11" in result.output  # a transformers head is sized by its config


_PROCESSOR = dict(do_resize=True, size={"height": 32, "width": 48}, do_rescale=True,
                  rescale_factor=1 / 255, do_normalize=True, image_mean=[0.5] * 3,
                  image_std=[0.25] * 3, resample=2)  # fmt: skip


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"do_center_crop": True}, "--input-size"),
        ({"keep_aspect_ratio": True}, "--input-size"),
        ({"size": {"shortest_edge": 32}}, "--input-size"),
        ({"do_flip_channel_order": True}, "BGR"),
    ],
)
def test_processors_robench_cannot_reproduce_are_refused(change: dict, expected: str) -> None:
    processor = SimpleNamespace(**{**_PROCESSOR, **change})
    with pytest.raises(ConfigError, match=expected) as caught:
        segmentation_preprocessing(processor, 3, "m", size_given=False)
    assert str(caught.value).count(". ") == 0  # one sentence
    if expected == "--input-size":  # --input-size replaces the processor's size
        spec = segmentation_preprocessing(processor, 3, "m", size_given=True)
        assert spec.input_size is None and spec.mean == pytest.approx((0.5,) * 3)


def test_a_squashing_processor_gives_size_and_pixel_unit_normalisation() -> None:
    spec = segmentation_preprocessing(SimpleNamespace(**_PROCESSOR), 3, "m", size_given=False)
    assert spec.input_size == (3, 32, 48)
    assert spec.mean == pytest.approx((0.5,) * 3) and spec.std == pytest.approx((0.25,) * 3)
