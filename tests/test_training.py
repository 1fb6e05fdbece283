"""`robench train`: the schedule, a loss that goes down, and a self-describing checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from safetensors import safe_open

from robench._core.errors import ConfigError
from robench.models.loading import load_model
from robench.training.loop import lr_at
from robench.training.train import TrainConfig, train


def test_learning_rate_warms_up_linearly_then_decays_to_zero() -> None:
    assert lr_at(0, 100, 10, 1.0) == pytest.approx(0.1)
    assert lr_at(9, 100, 10, 1.0) == pytest.approx(1.0)
    assert lr_at(55, 100, 10, 1.0) == pytest.approx(0.5)
    assert lr_at(100, 100, 10, 1.0) == pytest.approx(0.0)
    assert [lr_at(s, 100, 10, 1.0) for s in range(10, 100)] == sorted(
        [lr_at(s, 100, 10, 1.0) for s in range(10, 100)], reverse=True
    )


@pytest.mark.slow
def test_a_few_steps_decrease_the_loss_and_write_a_self_describing_checkpoint(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    result = train(
        TrainConfig(
            model="vit_nano_elliptical_patch4_28",
            out_dir=tmp_path,
            max_steps=30,
            train_limit=1500,
            val_limit=200,
            val_every=10,
            warmup_steps=3,
            lr=3e-3,
            batch_size=64,
            command="pytest",
        )
    )
    losses = [h["loss"] for h in result.history]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert result.best_val_top1 > 0.2  # well above chance (0.1) after 30 steps
    with safe_open(str(result.best_path), framework="pt") as fh:
        meta = fh.metadata()
    spec = json.loads(meta["robench"])
    assert spec["architecture"] == "vit_nano_elliptical_patch4_28"
    assert spec["mean"] == [0.286] and spec["classes"][0] == "T-shirt/top"
    assert json.loads(meta["robench.training.train"])["command"] == "pytest"
    loaded = load_model(None, checkpoint=result.best_path)  # nothing else needed
    assert loaded.architecture == "vit_nano_elliptical_patch4_28"
    assert loaded.sources["mean"] == "checkpoint metadata"


def test_bad_hyperparameters_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--lr"):
        train(TrainConfig(model="vit_nano_patch4_28", out_dir=tmp_path, lr=0))


@pytest.mark.slow
def test_training_under_torchrun_uses_ddp_and_writes_one_checkpoint(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    import os
    import subprocess
    import sys

    torchrun = Path(sys.executable).with_name("torchrun")
    done = subprocess.run(
        [str(torchrun), "--nproc_per_node=2", "-m", "robench", "train", "vit_nano_patch4_28",
         "--max-steps", "4", "--train-limit", "512", "--val-limit", "64", "--val-every", "2",
         "--batch-size", "32", "-o", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("best val top-1") == 1  # only rank 0 reports
    assert (tmp_path / "best.safetensors").exists() and (tmp_path / "last.safetensors").exists()
