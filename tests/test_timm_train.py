"""`python -m robench.training.timm_train` runs a timm-style script with robench's models."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_script_run_through_timm_train_sees_robench_models(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, timm\n"
        "model = timm.create_model(sys.argv[1])\n"
        "print(type(model.blocks[1].attn).__name__, sys.argv[0].endswith('train.py'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "robench.training.timm_train", str(script), "vit_nano_elliptical_patch4_28"],  # noqa: E501
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["EllipticalAttention", "True"]


def test_timm_train_without_a_script_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "robench.training.timm_train"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "usage" in done.stderr
