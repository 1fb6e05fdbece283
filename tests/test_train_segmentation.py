"""`robench train` on a segmentation model: per-pixel loss, mIoU validation, a checkpoint that
`robench eval` reads alone, and one sentence for data that holds no label maps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from typer.testing import CliRunner

from robench._core.errors import DataError
from robench.cli import app
from robench.data.segmentation.label_maps import IGNORE_INDEX, PAD_INDEX
from robench.data.segmentation.scenes import SCENE_CLASSES, FashionScenes
from robench.models.loading import load_model
from robench.training.objectives import SEGMENTATION
from robench.training.train import TrainConfig, train


def test_pixel_loss_leaves_out_padding_and_ignored_pixels() -> None:
    logits = torch.randn(2, 3, 4, 4)
    maps = torch.randint(0, 3, (2, 4, 4))
    loss = SEGMENTATION.loss(logits, maps, 0.0)
    assert loss == pytest.approx(float(torch.nn.functional.cross_entropy(logits, maps)))
    ignored = maps.clone()
    ignored[:, 0, 0] = IGNORE_INDEX  # ignored pixels change nothing
    kept = ignored != IGNORE_INDEX
    expected = torch.nn.functional.cross_entropy(logits.permute(0, 2, 3, 1)[kept], maps[kept])
    assert SEGMENTATION.loss(logits, ignored, 0.0) == pytest.approx(float(expected))
    # A batch of two map sizes: the second map is 2x4, padded to 4x4. Its sample's logits are
    # resized to 2x4 before they are compared, as the task scores them; padding is left out.
    padded = ignored.clone()
    padded[1, 2:] = PAD_INDEX
    small = torch.nn.functional.interpolate(
        logits[1:], size=(2, 4), mode="bilinear", align_corners=False
    )
    ce = torch.nn.functional.cross_entropy
    sums = ce(logits[:1], ignored[:1], ignore_index=IGNORE_INDEX, reduction="sum") + ce(
        small, ignored[1:, :2], ignore_index=IGNORE_INDEX, reduction="sum"
    )
    expected = sums / (kept[0].sum() + kept[1, :2].sum())
    assert SEGMENTATION.loss(logits, padded, 0.0) == pytest.approx(float(expected))
    # logits at a lower resolution are resized to the labels first
    assert SEGMENTATION.loss(logits[..., :2, :2], maps, 0.0).isfinite()


@pytest.mark.slow
def test_segmenter_trains_on_the_built_in_scenes_and_its_checkpoint_evaluates(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    result = train(
        TrainConfig(
            model="segmenter_nano_elliptical",
            out_dir=tmp_path,
            max_steps=30,
            train_limit=32,  # one batch, seen every step: its loss must fall
            val_limit=32,
            val_every=10,
            warmup_steps=3,
            lr=3e-3,
            batch_size=32,
            command="pytest",
        )
    )
    assert result.metric == "val_miou" and 0 < result.best_val <= 1
    losses = [h["loss"] for h in result.history]
    assert losses[-1] < losses[0]
    with safe_open(str(result.best_path), framework="pt") as fh:
        meta = fh.metadata()
    assert json.loads(meta["robench"])["classes"] == list(SCENE_CLASSES)
    assert "val_miou" in json.loads(meta["robench.training.train"])
    loaded = load_model(None, checkpoint=result.best_path)
    assert loaded.task == "semantic-segmentation"
    out = CliRunner().invoke(
        app,
        ["eval", "-c", str(result.best_path), "--suite", "segmentation-smoke", "--limit", "4",
         "-o", str(tmp_path / "r.json")],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["model"]["architecture"] == "segmenter_nano_elliptical"


def test_a_folder_of_classes_is_refused_for_a_segmentation_model(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    with pytest.raises(DataError):
        train(TrainConfig(model="segmenter_nano_baseline", data="fashion-mnist", out_dir=tmp_path))
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_batch_larger_than_the_training_scenes_is_one_sentence_and_exit_2(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    out = tmp_path / "run"
    args = ["train", "segmenter_nano_baseline", "--train-limit", "4", "--batch-size", "8"]
    result = CliRunner().invoke(app, [*args, "--max-steps", "1", "-o", str(out)])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "4 training images make no full batch of 8" in lines[0]
    assert "--batch-size" in lines[0]
    assert not out.exists() or not list(out.iterdir())  # nothing written


SHIPPED = Path(__file__).resolve().parents[1] / "models"


@pytest.mark.parametrize("role", ["baseline", "elliptical"])
def test_the_shipped_segmenters_cards_match_their_checkpoints(role: str) -> None:
    """The card quotes the command its checkpoint recorded, and the checkpoint is a segmenter
    of the scene classes that beats predicting background everywhere."""
    from robench.models.cards import check_card

    name = f"segmenter_nano_{role}_scenes"
    card = check_card(SHIPPED / f"{name}.toml", deep=True).card
    assert card.architecture == f"segmenter_nano_{role}"
    checkpoint = SHIPPED / f"{name}.safetensors"
    assert checkpoint.stat().st_size < 2_000_000
    with safe_open(str(checkpoint), framework="pt") as fh:
        meta = fh.metadata()
    assert json.loads(meta["robench"])["classes"] == list(SCENE_CLASSES)
    training = json.loads(meta["robench.training.train"])
    assert card.training_command == f"OMP_NUM_THREADS=1 {training['command']}"
    loaded = load_model(name)
    assert loaded.task == "semantic-segmentation"
    # Predicting background everywhere scores background IoU (its pixel share) / 11 classes.
    scenes = FashionScenes(split="test")
    background = np.mean([scenes.scene(i)[1] == 0 for i in range(64)])
    assert card.metrics["clean_miou"] > background / len(SCENE_CLASSES) + 0.03
