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
    assert result.best_val > 0.2  # well above chance (0.1) after 30 steps
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


def test_noise_augmentation_is_gaussian_in_pixel_space_and_validates_on_fixed_noise() -> None:
    import torch

    from robench.training.noise import NoisyInputs, add_noise

    images = torch.full((64, 1, 28, 28), 0.5)
    noisy = add_noise(images, 0.25, torch.Generator().manual_seed(0))
    residual = noisy - images
    assert abs(float(residual.mean())) < 0.01 and float(residual.std()) == pytest.approx(0.25, 0.02)
    assert float(noisy.max()) > 1  # unclipped, as Cohen et al.'s train.py
    seen: list[torch.Tensor] = []
    wrapper = NoisyInputs(lambda x: seen.append(x) or x, 0.25, 3, torch.device("cpu"))  # type: ignore[arg-type]
    wrapper(images)
    wrapper.reset()
    wrapper(images)
    assert torch.equal(seen[0], seen[1]) and not torch.equal(seen[0], images)


@pytest.mark.slow
def test_noise_sd_trains_under_noise_and_records_it(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    settings = {
        "model": "vit_nano_patch4_28",
        "max_steps": 4,
        "train_limit": 256,
        "val_limit": 64,
        "val_every": 2,
        "batch_size": 32,
    }
    plain = train(TrainConfig(**settings, out_dir=tmp_path / "plain"))  # type: ignore[arg-type]
    noisy = train(TrainConfig(**settings, out_dir=tmp_path / "noisy", noise_sd=0.5))  # type: ignore[arg-type]
    again = train(TrainConfig(**settings, out_dir=tmp_path / "again", noise_sd=0.5))  # type: ignore[arg-type]
    assert noisy.history == again.history  # seeded noise
    assert noisy.history != plain.history
    with safe_open(str(noisy.best_path), "pt") as f:
        meta = json.loads(f.metadata()["robench.training.train"])
    assert meta["config"]["noise_sd"] == 0.5
    with pytest.raises(ConfigError, match="noise-sd"):
        train(TrainConfig(**settings, out_dir=tmp_path / "bad", noise_sd=-1.0))  # type: ignore[arg-type]


def test_noise_sd_is_refused_for_text_models_and_when_negative(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from robench.cli import app

    out = tmp_path / "out"
    for args in (
        ["train", "transformer_lm_nano_pydocs", "--noise-sd", "0.25", "-o", str(out)],
        ["train", "vit_nano_patch4_28", "--noise-sd", "-1", "-o", str(out)],
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and "--noise-sd" in result.output, result.output
        assert "Traceback" not in result.output
    assert not out.exists()
