"""benchmarks/bench_gpu.py without a GPU: the section says "not measured" for every
(model, workload) pair, shows no throughput, and leaves the report's other sections alone; and
its CPU dry run (`--device cpu --quick`) goes through `robench eval` and `robench.evaluate`."""

from __future__ import annotations

import datetime
import importlib
import json
import re
from pathlib import Path
from types import ModuleType

import pytest
import torch

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the script imports its sibling report_sections
    return importlib.import_module("bench_gpu")


def _table(section: str) -> tuple[list[str], dict[tuple[str, str], list[str]]]:
    """The header cells, and (model, workload) -> all cells of each row."""
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    split = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    header, rows = split[0], split[1:]
    return header, {(cells[0].strip("`"), cells[1]): cells for cells in rows}


def _check_not_measured(bench: ModuleType, section: str) -> None:
    assert section.startswith(bench.START) and section.endswith(bench.END)
    header, rows = _table(section)
    expected = {(m, w) for m in bench.MODELS for w in bench.WORKLOADS}
    assert set(rows) == expected and len(expected) == 28
    rates = [i for i, name in enumerate(header) if "images/s" in name]
    assert len(rates) == 2  # robench's and the bare loop's
    for cells in rows.values():
        assert len(cells) == len(header)
        assert cells[2:] == ["not measured"] * (len(header) - 2)
        assert not any(re.search(r"\d", cells[rate]) for rate in rates)  # no throughput


def test_not_measured_section_has_a_row_per_model_and_workload(bench: ModuleType) -> None:
    started = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    section = bench.not_measured_section("No CUDA device.", started)
    _check_not_measured(bench, section)
    assert "No CUDA device." in section


def test_cuda_run_without_a_gpu_writes_not_measured_and_exits_0(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "benchmarks.md"
    out.write_text("# Benchmarks\n\n<!-- other -->\nkept\n<!-- /other -->\n")
    assert bench.main(["--device", "cuda", "--output", str(out)]) == 0
    text = out.read_text()
    assert "<!-- other -->\nkept\n<!-- /other -->" in text
    section = text[text.index(bench.START) : text.index(bench.END) + len(bench.END)]
    _check_not_measured(bench, section)
    assert "not lent a GPU" in section and "python benchmarks/bench_gpu.py" in section


def test_cpu_run_must_name_its_output(bench: ModuleType) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.parse_args(["--device", "cpu", "--quick"])
    assert exc.value.code == 2


@pytest.mark.slow
def test_cpu_quick_dry_run_goes_through_robench_eval(bench: ModuleType, tmp_path: Path) -> None:
    """Every quick workload is timed from a `robench eval` report, beside its bare loop, and
    `certify` from `robench.evaluate`; the numbers are written as JSON and markdown."""
    out = tmp_path / "gpu.md"
    phases = ["--phases", "throughput", "certify"]
    assert bench.main(["--device", "cpu", "--quick", "--output", str(out), *phases]) == 0
    found = json.loads(out.with_suffix(".json").read_text())
    rows = {(row["model"], row["workload"]): row for row in found["rows"]}
    warm = [f"{w}, warm in memory" for w in bench.IN_MEMORY]
    expected = {(bench.MODELS[0], w) for w in (*bench.QUICK_WORKLOADS, *warm)}
    assert set(rows) == expected
    for row in rows.values():
        assert row["robench_images_per_s"] > 0 and row["bare_images_per_s"] > 0
        assert row["ratio"] > 0
    assert rows[(bench.MODELS[0], "clean")]["robench_top1"] == 1.0  # labels: the model's top-1
    assert rows[(bench.MODELS[0], warm[0])]["robench_top1"] == 1.0  # same images
    certify = found["certify"]
    assert certify["samples"] == 2 and certify["seconds_per_sample"] > 0
    assert certify["precision"] == "fp32"
    section = out.read_text()
    assert "robench / bare" in section and "CPU run" in section
