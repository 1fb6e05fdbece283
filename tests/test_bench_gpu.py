"""benchmarks/bench_gpu.py without a GPU: the section says "not measured" for every
(workload, model) pair, shows no throughput, and leaves the report's other sections alone.
No model runs here."""

from __future__ import annotations

import datetime
import importlib
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
    """The header cells, and (workload, model) -> all cells of each row."""
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    split = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    header, rows = split[0], split[1:]
    return header, {(cells[0], cells[1].strip("`")): cells for cells in rows}


def _check_not_measured(bench: ModuleType, section: str) -> None:
    assert section.startswith(bench.START) and section.endswith(bench.END)
    header, rows = _table(section)
    expected = {(w, m) for w in bench.WORKLOADS for m in bench.MODELS}
    assert set(rows) == expected and len(expected) == 6
    rate = next(i for i, name in enumerate(header) if name.startswith("images/s"))
    for cells in rows.values():
        assert len(cells) == len(header)
        assert cells[2:] == ["not measured"] * (len(header) - 2)
        assert not re.search(r"\d", cells[rate])  # no throughput of any kind


def test_not_measured_section_has_all_six_rows(bench: ModuleType) -> None:
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
