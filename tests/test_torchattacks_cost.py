"""The `torchattacks.NAME` kinds' estimated passes per sample (torchattacks_cost.py) against the
passes a real run counts (the report's `cost`), for every attack: always an upper bound, and
within the factor docs/cost.md states for it, on a model that breaks samples early (the small
CNN of the parity tests) and on one that no attack can break (the worst case the estimate is
written for). Also: `robench list perturbations` and `robench eval --dry-run` show the cost."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torchattacks_cases import SMALL, tiny_batch, tiny_model
from typer.testing import CliRunner

import robench
from robench.cli import app
from robench.evaluation.suites import suite_from_data
from robench.perturbations.base import REFERENCE_SHAPE

DOC = Path(__file__).resolve().parents[1] / "docs" / "cost.md"
SHAPE = (3, 12, 12)  # the test models' input
_ROW = re.compile(r"^\| `torchattacks\.(\w+)` \|.*\| ([\d.]+) \| ([\d.]+) \|$")
# Where no sample can break, an attack still stops early: CW when its loss rises, EAD when
# its loss stops falling (`abort_early`, set off here), so both are run as the bound assumes
# them; AutoAttack's standard version runs Square's 5,000 queries, too slow for a test.
_NOTHING_BREAKS: dict[str, dict[str, Any]] = {
    "EADL1": {"abort_early": False},
    "EADEN": {"abort_early": False},
    "AutoAttack": {"version": "rand"},
}


def documented_ratios() -> dict[str, tuple[float, float]]:
    """Attack -> (estimate / count where nothing breaks, on the test CNN), docs/cost.md."""
    rows = (_ROW.match(line) for line in DOC.read_text(encoding="utf-8").splitlines())
    return {m[1]: (float(m[2]), float(m[3])) for m in rows if m}


def _unbreakable() -> nn.Module:
    """A linear model whose bias puts every image in class 3 by a margin no image in [0, 1]
    can overcome: every attack runs every step on every sample."""
    torch.manual_seed(0)
    linear = nn.Linear(3 * 12 * 12, 10)
    with torch.no_grad():
        linear.weight.mul_(0.01)
        linear.bias.zero_()
        linear.bias[3] = 50.0
    return nn.Sequential(nn.Flatten(), linear).eval()


def _estimate_and_count(
    model: nn.Module, name: str, params: dict[str, Any]
) -> tuple[int, float, float, float]:
    """(estimate, counted forward + 2 backward, counted forward + backward, top-1)."""
    images, labels = tiny_batch(model, n=2)
    entry = {"kind": f"torchattacks.{name}", **params}
    logging.disable(logging.WARNING)  # the sanity warnings of a model made to be odd
    try:
        report = robench.evaluate(model, suite=[entry], data=(images, labels), batch_size=2)
    finally:
        logging.disable(logging.NOTSET)
    (result,) = [r for r in report.results if r.name != "clean"]
    cost = result.cost
    assert cost is not None and cost.samples == 2
    planned = suite_from_data([entry], "image-classification").plan[0].params
    estimate = planned.passes_per_sample_on(10, SHAPE)
    weighted = (cost.forward + 2 * cost.backward) / cost.samples
    return estimate, weighted, cost.passes_per_sample, result.metrics["top1"].value


def test_the_doc_states_a_factor_for_every_attack_tested() -> None:
    assert set(documented_ratios()) == set(SMALL)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMALL))
def test_the_estimate_bounds_the_count_when_samples_break(name: str) -> None:
    estimate, weighted, counted, _ = _estimate_and_count(tiny_model(), name, SMALL[name])
    assert estimate >= weighted >= counted, (estimate, weighted)
    assert estimate <= documented_ratios()[name][1] * weighted, (estimate, weighted)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMALL))
def test_the_estimate_is_tight_when_nothing_breaks(name: str) -> None:
    params = SMALL[name] | _NOTHING_BREAKS.get(name, {})
    estimate, weighted, counted, top1 = _estimate_and_count(_unbreakable(), name, params)
    assert top1 == 1.0  # nothing broke: the case the estimate is written for
    assert estimate >= weighted >= counted, (estimate, weighted)
    assert estimate <= documented_ratios()[name][0] * weighted, (estimate, weighted)


def test_cost_grows_with_what_the_attack_repeats() -> None:
    """The estimate reads the parameters that set the work: doubling them doubles it (up to
    the fixed passes around the attack)."""

    def passes(entry: dict[str, Any], shape: tuple[int, ...] = SHAPE, classes: int = 10) -> int:
        params = suite_from_data([entry], "image-classification").plan[0].params
        return params.passes_per_sample_on(classes, shape)

    ead = {"kind": "torchattacks.EADL1", "binary_search_steps": 2, "max_iterations": 10}
    assert passes(ead) == 1 + 4 * 2 * 10 + 3  # + the re-run and min_norm's two forwards
    assert passes(ead | {"targeted": "random"}) == passes(ead) + 1  # the target choice
    deepfool = {"kind": "torchattacks.DeepFool", "steps": 4}
    assert passes(deepfool, classes=100) - 3 == 4 * (1 + 2 * 100)
    jsma = {"kind": "torchattacks.JSMA", "gamma": 0.1}
    assert passes(jsma, shape=(3, 32, 32)) - 3 == 1 + 154 * (2 + 2 * 10)  # ceil(3072 / 20)
    assert passes(jsma, shape=(1, 28, 28)) - 3 == 1 + 40 * (2 + 2 * 10)
    square = {"kind": "torchattacks.Square", "n_queries": 100, "n_restarts": 2}
    assert passes(square) == 1 + 2 + 2 * 102
    apgdt = {"kind": "torchattacks.APGDT", "steps": 5}
    # n_classes filled from the model (a probe forward) unless given.
    assert passes(apgdt, classes=5) == 2 + 1 + 4 * (1 + 3 * 6)
    assert passes(apgdt | {"n_classes": 3}, classes=5) == 1 + 1 + 2 * (1 + 3 * 6)


def test_list_perturbations_states_the_cost_of_every_runnable_torchattacks_kind() -> None:
    result = CliRunner().invoke(app, ["list", "perturbations", "torchattacks.*"])
    assert result.exit_code == 0, result.output
    rows = dict(line.split("\t", 1) for line in result.stdout.splitlines())
    size = "x".join(map(str, REFERENCE_SHAPE))
    for kind, detail in rows.items():
        if "not available" in detail:
            assert "cost" not in detail, kind
            continue
        shown = re.search(r"cost <= ([\d,]+) pass(?:es)?/sample at these defaults", detail)
        assert shown is not None, (kind, detail)
        assert f"(10 classes, {size} images; attack: " in detail, kind
        params = suite_from_data([{"kind": kind}], "image-classification").plan[0].params
        assert int(shown[1].replace(",", "")) == params.passes_per_sample(10), kind
    assert "1 + 4 x binary_search_steps x max_iterations" in rows["torchattacks.EADL1"]
    assert "cost <= 10,543 passes/sample" in rows["torchattacks.SparseFool"]


def test_the_dry_run_costs_a_slow_attack_on_the_data_it_would_run_on(tmp_path: Path) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text(
        'name = "slow"\nversion = 1\ndescription = "two slow torchattacks kinds"\n\n'
        '[[perturbations]]\nkind = "torchattacks.JSMA"\n\n'
        '[[perturbations]]\nkind = "torchattacks.SparseFool"\nsteps = 3\n'
    )
    args = ["eval", "vit_nano_fmnist", "-s", str(suite), "--limit", "2", "--dry-run"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = {
        m[1]: int(m[2])
        for m in (
            re.match(r"^\| (\S+) \| \S+ \| \S+ \| \d+ \| (\d+) \| \d+ \|$", line)
            for line in result.stdout.splitlines()
        )
        if m
    }
    # Fashion-MNIST: 1 x 28 x 28 images, 10 classes.
    assert rows["torchattacks.JSMA"] == 3 + 1 + 40 * (2 + 2 * 10)
    assert rows["torchattacks.SparseFool"] == 3 + 3 * (4 + 50 * (1 + 2 * 10))
