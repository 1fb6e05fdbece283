"""The demo's phase lines (robench/cli/_demo/phases.py): sized before the run, each saying
what is left; the estimate follows the pace of the phases done."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest
from rich.console import Console

from robench.cli._demo import PLANS, planned_phases
from robench.cli._demo import phases as phases_module
from robench.cli._demo.phases import Phase, PhaseClock, evaluation_phase


def test_the_tour_plans_four_evaluations_then_figures_and_page() -> None:
    planned = planned_phases(PLANS["tour"], {})
    assert [p.what for p in planned] == [
        "baseline: smoke",
        "elliptical: smoke",
        "baseline: corruptions-smoke",
        "elliptical: corruptions-smoke",
        "figures",
        "page",
    ]
    assert all(p.idle_s > 0 for p in planned)


def test_every_section_adds_its_phases_and_a_skipped_one_drops_out() -> None:
    everything = [p.what for p in planned_phases(PLANS["quick"], {})]
    assert everything[4:6] == ["baseline: text-smoke", "elliptical: text-smoke"]
    assert {"-segmentation", "-text-classification", "-certify"} <= set(everything)
    fewer = [p.what for p in planned_phases(PLANS["quick"], {"-segmentation": "skipped"})]
    assert "-segmentation" not in fewer and len(fewer) == len(everything) - 1


def test_a_phase_is_sized_by_its_counted_passes() -> None:
    """smoke on 200 images: clean 1 + FGSM 4 + PGD-5 16 passes a sample (suite_cost)."""
    small, large = evaluation_phase("a", "smoke", 100), evaluation_phase("b", "smoke", 200)
    per_pass = phases_module.SECONDS_PER_PASS["image-classification"]
    assert large.idle_s - small.idle_s == pytest.approx(100 * 21 * per_pass)


def test_the_estimate_follows_the_pace_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = PhaseClock([Phase("a", 10.0), Phase("b", 10.0), Phase("c", 20.0)])
    assert clock.left(0, 0.0) == "phase 1 of 3; 3 left, about 40 s on 2 idle cores"
    # The first phase took 30 s instead of 10: three times slower, 30 idle seconds left -> 90.
    assert clock.left(1, 30.0) == "phase 2 of 3; 2 left, about 90 s at the pace so far"
    assert clock.left(2, 20.0) == "phase 3 of 3; 1 left, about 20 s at the pace so far"
    assert "min" in clock.left(1, 300.0)  # 900 s -> 15.0 min


def test_each_started_phase_is_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    clock = PhaseClock([Phase("a", 1.0), Phase("b", 1.0)])
    with caplog.at_level(logging.INFO, logger="robench.cli._demo.phases"):
        clock.start("evaluating a")
        clock.start("evaluating b")
        clock.done()
    lines = [r.getMessage() for r in caplog.records]
    assert "evaluating a (phase 1 of 2; 2 left" in lines[0]
    assert "evaluating b (phase 2 of 2; 1 left" in lines[1]
    assert lines[2].endswith("done")


def test_the_file_list_is_wrapped_to_the_width(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from robench.cli import demo

    console = Console(file=io.StringIO(), width=60, force_terminal=True, color_system=None)
    monkeypatch.setattr(demo, "err", console)
    files = [tmp_path / f"a-rather-long-report-name-{i}.json" for i in range(12)]
    demo._list_files(tmp_path, files, set())
    text = console.file.getvalue()  # type: ignore[attr-defined]
    listed = text.splitlines()[1:]  # after "wrote 12 files in TMP_PATH:"
    assert len(listed) > 1 and max(len(line) for line in listed) <= 60
    assert "a-rather-long-report-name-11.json" in text
