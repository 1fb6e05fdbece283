"""Piped, stderr is quiet: progress is a few timed lines however many perturbations a suite
has, and a log record is one line, never wrapped; results alone go to stdout."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

import robench.cli._progress as progress_module
from robench.cli import app
from robench.cli._progress import LineProgress


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_many_quick_steps_write_two_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = _Clock()
    monkeypatch.setattr(progress_module.time, "perf_counter", clock)
    progress = LineProgress()
    for step in range(500):
        progress.start(f"corruption-{step}", 100, 0)
        progress.advance(100)
        clock.now += 0.1
        progress.finish()
    progress.close()
    lines = _lines(capsys)
    assert lines == [
        "[    0.0s] corruption-0: 100 samples ...",
        "[   50.0s] 500 steps (50000 samples) done in 50.0s",
    ]


def test_a_long_run_writes_a_line_a_minute_then_ever_fewer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = _Clock()
    monkeypatch.setattr(progress_module.time, "perf_counter", clock)
    progress = LineProgress()
    for step in range(3600):  # one step a second for an hour
        progress.start(f"step-{step}", 10, 0)
        clock.now += 1.0
        progress.finish()
    progress.close()
    lines = _lines(capsys)
    assert lines[1].startswith("[   60.0s] step-60: 10 samples ... (60 steps done)")
    assert 10 <= len(lines) <= 16, lines  # not 60 (a line a minute), not 7200 (two a step)


def test_a_warning_is_one_line_on_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    from robench.cli._output import LineHandler

    long = "x " * 200  # wider than any terminal
    record = logging.LogRecord("robench.t", logging.WARNING, __file__, 1, long, None, None)
    LineHandler().emit(record)
    assert _lines(capsys) == [f"warning: {long}"]


@pytest.mark.parametrize("suite", ["smoke", "corruptions-smoke"])
def test_piped_eval_stderr_does_not_grow_with_the_suite(
    suite: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fashion_mnist_dir: Path
) -> None:
    """smoke has 3 perturbations and corruptions-smoke 13: both write the same progress
    lines (the heartbeat is pushed out of reach, so a slow machine does not add any)."""
    monkeypatch.setattr(progress_module, "HEARTBEAT_S", 1e9)
    out = tmp_path / "r.json"
    args = ["eval", "vit_nano_fmnist", "-s", suite, "--limit", "8", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    progress = [line for line in lines if line.startswith("[")]
    assert len(progress) == 2, lines  # the first step, and the summary
    assert progress[-1].endswith("s") and " steps (" in progress[-1]
    assert all(not line.startswith(" ") for line in lines), lines  # nothing wrapped
    assert len(lines) <= 6, lines  # + warnings and `report written to`
    assert "report written to" not in result.stdout and "clean" in result.stdout
