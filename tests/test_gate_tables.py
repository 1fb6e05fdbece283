"""`robench gate` fits the terminal (issue 47 item 5): at 80 and 120 columns, piped or on a
terminal, every line fits and every check's name is shown whole; `gate --help` states the
built-in policy's tolerance of every metric, derived from the policy and the registry."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from robench.cli import app
from robench.results.gate.checks import policy_text
from robench.results.gate.policy import Policy
from robench.results.gate.regression import run_gate
from robench.results.gate.tables import RichGate, markdown_fitting
from robench.results.report.schema import read_report
from robench.results.stats.metrics import METRICS

DEMO = Path(__file__).resolve().parents[1] / "reports" / "demo"
PAIRS = [
    ("baseline-corruptions.json", "elliptical-corruptions.json"),
    ("baseline-segmentation.json", "elliptical-segmentation.json"),
    ("baseline-text.json", "elliptical-text.json"),
]
runner = CliRunner()


@pytest.fixture(scope="module", params=PAIRS, ids=lambda p: p[0])
def gated(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    base, cand = (read_report(DEMO / name) for name in request.param)
    return request.param, run_gate(base, cand)


@pytest.mark.parametrize("width", [80, 120])
def test_piped_gate_fits_columns_and_names_every_check_whole(
    gated, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    (base, cand), result = gated
    monkeypatch.setenv("COLUMNS", str(width))
    run = runner.invoke(app, ["gate", "-b", str(DEMO / base), "-c", str(DEMO / cand)])
    assert run.exit_code in (0, 1), run.output
    lines = run.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= width
    for check in result.checks:  # each name whole, on a line of its own row
        assert any(f"`{check.name}`" in line or f"| {check.name} |" in line for line in lines)
    assert run.stdout.strip() == markdown_fitting(result, width)


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_terminal_gate_fits_its_width_and_names_every_check_whole(gated, width: int) -> None:
    _, result = gated
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(RichGate(result))
    text = console.export_text()
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width
    assert all(line.rstrip()[-1] in "┃│┓┛┩┘" for line in lines[1:] if line.strip())  # not cut
    for check in result.checks if width >= 80 else []:  # 60: folded, never cut
        assert check.name in text, check.name  # never `clean…`


def test_help_states_every_tolerance_of_the_built_in_policy() -> None:
    policy = Policy()
    text = policy_text(policy)
    assert "clean/top1 may drop 1.00 pp" in text
    for name, tolerance in policy.metric_defaults.items():
        assert name in text
        if tolerance.max_rel_drop is not None:
            assert f"{100 * tolerance.max_rel_drop:g}% of the baseline" in text
    assert "nll 5% of the baseline" in text  # not "everything else 2 pp"
    assert {n for n in METRICS if METRICS.get(n).gate_tolerance} == set(policy.metric_defaults)
    shown = runner.invoke(app, ["gate", "--help"], env={"COLUMNS": "200"}).stdout
    flat = " ".join(shown.replace("│", " ").split())
    assert " ".join(text.split()) in flat
    assert "everything else 2 pp" not in flat
