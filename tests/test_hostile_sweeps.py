"""Hostile sweep plans (issue 39): a negative seed or an out-of-range eval option is refused
before any job starts (they were started and failed, exit 3), and a sweep folder that cannot
be written (read-only, under /proc, through a file) is one sentence, exit 2, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hostile import refused

PLAN = """out_dir = "{out_dir}"
suites = ["smoke"]
seeds = {seeds}

[[models]]
model = "vit_nano_fmnist"
{model_options}
[eval]
limit = {limit}
"""


def _plan(root: Path, out_dir: str = "sweep", seeds: str = "[0]", limit: str = "8",
          model_options: str = "") -> Path:  # fmt: skip
    path = root / "plan.toml"
    text = PLAN.format(out_dir=out_dir, seeds=seeds, limit=limit, model_options=model_options)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("plan", "expected"),
    [
        ({"seeds": "[0, -1]"}, "seeds must be >= 0"),
        ({"seeds": "[18446744073709551616]"}, "seeds"),
        ({"limit": "0"}, "[eval] limit = 0 is out of range"),
        ({"limit": "-3"}, "expected >= 1"),
        ({"model_options": "options = { batch_size = 0 }\n"}, "vit_nano_fmnist batch_size = 0"),
        ({"model_options": "options = { std = [0.5, 0.0] }\n"}, "std = [0.5, 0.0]"),
        ({"out_dir": "/proc/robench-sweep"}, "cannot create the sweep folder /proc/robench-sweep"),
        ({"out_dir": "plan.toml/sweep"}, "is a file"),
    ],
)
def test_a_bad_plan_is_refused_before_any_job(
    tmp_path: Path, plan: dict[str, str], expected: str
) -> None:
    path = _plan(tmp_path, **plan)
    line = refused(["sweep", path], tmp_path, expected)
    assert "plan" in line or str(path) in line


@pytest.mark.parametrize("action", ["run", "collect"])
def test_a_read_only_sweep_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    (tmp_path / "ro").mkdir()
    path = _plan(tmp_path, out_dir="ro/sweep")
    real_access, denied = os.access, str(tmp_path / "ro")

    def access(p: object, mode: int, **kw: object) -> bool:  # root ignores permissions
        return str(p) != denied and real_access(p, mode, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    refused(["sweep", action, path], tmp_path, f"{tmp_path / 'ro'} is not writable", "out_dir")
