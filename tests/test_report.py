"""Report schema: the committed JSON Schema is current, writes are atomic, reads validate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robench._core.errors import ConfigError
from robench.results.report.schema import read_report, report_json_schema, write_text_atomic
from robench.results.stats.metrics import wilson_interval

ROOT = Path(__file__).resolve().parents[1]


def test_committed_json_schema_matches_the_code() -> None:
    committed = json.loads((ROOT / "docs" / "report.schema.json").read_text())
    assert committed == report_json_schema(), "run `robench schema > docs/report.schema.json`"


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "r.json"
    write_text_atomic(target, '{"a": 1}\n')
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    write_text_atomic(target, '{"ok": true}\n')
    with pytest.raises(UnicodeEncodeError):  # fails part-way, after the temporary file opened
        write_text_atomic(target, '{"bad": "\ud800"}\n')
    assert json.loads(target.read_text()) == {"ok": True}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_reading_a_report_of_another_schema_version_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema_version": 0}))
    with pytest.raises(ConfigError, match="schema_version 0"):
        read_report(path)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    # Reference values from the closed-form Wilson interval (z = 1.959964).
    [(0, 10, 0.0, 0.27753), (5, 10, 0.23659, 0.76341), (95, 100, 0.88825, 0.97846)],
)
def test_wilson_interval_matches_reference_values(k: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=1e-4)
    assert hi == pytest.approx(high, abs=1e-4)


def test_reports_and_checkpoints_get_the_users_usual_permissions(tmp_path: Path) -> None:
    import os

    import torch

    from robench.models.checkpoints import save_safetensors

    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "r.json", '{"a": 1}\n')
        save_safetensors({"w": torch.zeros(2)}, tmp_path / "m.safetensors", {})
    finally:
        os.umask(old)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "m.safetensors").stat().st_mode & 0o777 == 0o644
