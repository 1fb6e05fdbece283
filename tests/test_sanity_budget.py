"""The sanity battery's budget: costs that match what attacks run, a fit that never exceeds
its cap, one progress bar per check, and a default battery within 3x its suite."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils.data import TensorDataset

from robench.evaluation.runner import perturb_and_score
from robench.evaluation.sanity.budget import (
    CAP_FACTOR,
    FLOOR_BUDGET,
    FULL_BUDGET,
    QUICK_BUDGET,
    SanityBudget,
    battery_cost,
    battery_runs,
    choose_budget,
    fit_budget,
)
from robench.evaluation.sanity.checks import run_sanity
from robench.evaluation.suites import PlannedPerturbation
from robench.perturbations import PERTURBATIONS
from robench.tasks import load_task

_STRENGTHS = ("pgd_steps", "unbounded_steps", "spsa_steps", "spsa_directions", "eot_iterations")


class _PassCounter:
    """Model passes over single samples through a module: a forward counts 1 per sample, a
    backward to the input 2 (so a forward and backward is 3, the cost model's unit). `phase`
    files them under the part of a run that is going on."""

    def __init__(self, module: nn.Module) -> None:
        self.phase = "setup"
        self.passes: dict[str, int] = {}
        module.register_forward_hook(self._forward)

    def _add(self, n: int) -> None:
        self.passes[self.phase] = self.passes.get(self.phase, 0) + n

    def _forward(self, module: nn.Module, args: tuple, output: torch.Tensor) -> None:
        self._add(args[0].shape[0])
        if output.requires_grad:
            output.register_hook(lambda grad: self._add(2 * grad.shape[0]))


def _unbreakable_model() -> nn.Module:
    """A linear model that always predicts class 0 by a wide margin: no attack succeeds, so
    AutoAttack runs every attack on every sample (its worst case)."""
    torch.manual_seed(0)
    linear = nn.Linear(28 * 28, 10)
    with torch.no_grad():
        linear.weight.mul_(0.01)
        linear.bias.zero_()
        linear.bias[0] = 100.0
    return nn.Sequential(nn.Flatten(), linear).eval()


@pytest.mark.parametrize(
    ("kind", "params", "exact"),
    [
        ("clean", {}, True),
        ("fgsm", {"eps": "8/255"}, True),
        ("fgm", {"eps": 0.5}, True),
        ("pgd", {"eps": "8/255", "steps": 3}, True),
        ("pgd", {"eps": 0.0, "steps": 3}, True),
        ("pgd", {"eps": 0.5, "norm": "l2", "steps": 2}, True),
        ("spsa", {"eps": "8/255", "steps": 2, "nb_sample": 6}, True),
        ("corruption", {"corruption": "gaussian_noise", "severity": 1}, True),
        ("autoattack", {"eps": "8/255", "version": "rand", "n_iter": 2, "eot_iter": 2}, False),
        ("autoattack", {"eps": "8/255", "n_iter": 2, "n_queries": 10}, False),
        ("autoattack", {"eps": "8/255", "attacks": ["fab", "apgd-dlr"], "n_iter": 2}, False),
    ],
)
def test_passes_per_sample_count_what_the_runner_runs(kind: str, params: dict, exact: bool) -> None:
    model = _unbreakable_model()
    counter = _PassCounter(model)
    counter.phase = "run"
    validated = PERTURBATIONS.get(kind).Params.model_validate(params)
    planned = PlannedPerturbation(kind, kind, validated, None)
    images, labels = torch.rand(8, 1, 28, 28), torch.zeros(8, dtype=torch.long)
    task = load_task("image-classification")
    perturb_and_score(model, task, planned, images, labels, 0)
    measured = counter.passes["run"] / len(images)
    estimate = validated.passes_per_sample()
    if exact:
        assert measured == estimate
    else:  # an upper bound, and not a loose one
        assert measured <= estimate <= measured + 10


_CAPS = st.integers(min_value=0, max_value=3_000_000)
_FLAGS = {
    "norm": st.sampled_from(["linf", "l2"]),
    "adaptive": st.booleans(),
    "randomized": st.booleans(),
}


def _cost(budget: SanityBudget, **flags: object) -> int:
    return battery_cost(budget, **flags) if budget.samples else 0  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(cap=_CAPS, available=st.integers(min_value=1, max_value=600), **_FLAGS)
def test_the_fitted_budget_never_exceeds_its_cap(cap: int, available: int, **flags) -> None:
    budget = fit_budget(cap, available, **flags)
    assert budget.samples is not None and 0 <= budget.samples <= available
    assert _cost(budget, **flags) <= cap
    full = dataclasses.replace(FULL_BUDGET, samples=min(available, 200))
    if battery_cost(full, **flags) <= cap and available <= 200:
        assert budget == full  # nothing is given up that the cap allows
    for name in _STRENGTHS:
        assert getattr(FLOOR_BUDGET, name) <= getattr(budget, name) <= getattr(FULL_BUDGET, name)


@settings(max_examples=150, deadline=None)
@given(caps=st.tuples(_CAPS, _CAPS), available=st.integers(min_value=1, max_value=600), **_FLAGS)
def test_a_larger_cap_never_gives_a_weaker_budget(
    caps: tuple[int, int], available: int, **flags
) -> None:
    small, large = (fit_budget(cap, available, **flags) for cap in sorted(caps))
    for name in ("samples", *_STRENGTHS):
        assert getattr(small, name) <= getattr(large, name), name
    assert set(large.left_out) <= set(small.left_out)
    assert _cost(small, **flags) <= _cost(large, **flags)


def test_below_the_floors_spsa_goes_first_then_samples_then_every_attack() -> None:
    floors = dataclasses.replace(FLOOR_BUDGET, samples=1)
    per_sample = battery_cost(floors, "linf")
    without_spsa = battery_cost(
        dataclasses.replace(floors, left_out=("black_box_not_stronger",)), "linf"
    )
    at_floor = fit_budget(64 * per_sample, 200)
    assert at_floor.samples == 64 and not at_floor.left_out
    for name in ("pgd_steps", "unbounded_steps", "spsa_steps", "spsa_directions"):
        assert getattr(at_floor, name) == getattr(FLOOR_BUDGET, name)
    fewer = fit_budget(10 * without_spsa, 200)
    assert fewer.samples == 10 and fewer.left_out == ("black_box_not_stronger",)
    alone = fit_budget(without_spsa - 1, 200)
    assert alone.samples == 1 and "gradients_and_determinism" not in alone.left_out
    assert battery_runs(alone, eps=0.1, norm="linf").keys() == {"gradients_and_determinism"}
    nothing = fit_budget(0, 200)
    assert nothing.samples == 0 and "gradients_and_determinism" in nothing.left_out


def test_full_and_quick_ignore_the_cap() -> None:
    for mode, budget in (("full", FULL_BUDGET), ("quick", QUICK_BUDGET)):
        chosen = choose_budget(mode, suite_passes=1, available_samples=50, norm="linf")
        assert chosen == dataclasses.replace(budget, samples=50)


class _RecordingProgress:
    def __init__(self, counter: _PassCounter | None = None) -> None:
        self.bars: list[list] = []  # [name, total, advanced]
        self.counter = counter

    def start(self, name: str, total: int, done: int) -> None:
        self.bars.append([name, total, done])
        if self.counter is not None:
            self.counter.phase = "battery" if name.startswith("sanity ") else "suite"

    def advance(self, n: int) -> None:
        self.bars[-1][2] += n

    def finish(self) -> None:
        if self.counter is not None:
            self.counter.phase = "between"


def test_every_check_shows_one_progress_bar(trained_classifier: nn.Module, fmnist_test) -> None:
    images, labels = fmnist_test
    n = 12
    budget = dataclasses.replace(FLOOR_BUDGET, samples=n)
    progress = _RecordingProgress()
    results = run_sanity(
        trained_classifier,
        TensorDataset(images[:40], labels[:40]),
        list(range(40)),
        eps=8 / 255,
        seed=0,
        batch_size=5,
        device=torch.device("cpu"),
        budget=budget,
        progress=progress,
    )
    runs = battery_runs(budget, eps=8 / 255, norm="linf")
    assert [bar[0].split(" (")[0] for bar in progress.bars] == [f"sanity {r.name}" for r in results]
    assert progress.bars[1][0] == "sanity monotone_in_eps (4 runs)"
    assert [r.name for r in results] == list(runs)
    for (name, total, advanced), check in zip(progress.bars, runs.values(), strict=True):
        # The gradients check runs on one batch (5 samples); the others on all, once per run.
        assert total == advanced == (n * len(check) if check else 5), name
    # The one-step check reuses the sweep's PGD at eps, seeds and all.
    assert results[2].values["pgd"] == results[1].values["eps_x1.0"]


_CLEAN_FGSM = """
name = "clean-fgsm"
version = 1
[[perturbations]]
kind = "clean"
[[perturbations]]
kind = "fgsm"
eps = "8/255"
"""


def test_the_default_battery_costs_at_most_3x_its_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fashion_mnist_dir: Path
) -> None:
    from robench.evaluation import request as request_module
    from robench.evaluation.request import EvalRequest, evaluate
    from robench.results.report.schema import read_report

    counters: list[_PassCounter] = []
    load_model = request_module.load_model

    def counted(*args, **kwargs):
        loaded = load_model(*args, **kwargs)
        counters.append(_PassCounter(loaded.model))
        return loaded

    monkeypatch.setattr(request_module, "load_model", counted)
    (tmp_path / "suite.toml").write_text(_CLEAN_FGSM)
    out = tmp_path / "r.json"
    request = EvalRequest(
        suite=str(tmp_path / "suite.toml"),
        data="fashion-mnist",
        out=out,
        model="vit_nano_fmnist",
        limit=20,
        batch_size=8,
        sanity=True,
    )

    class Progress(_RecordingProgress):
        def start(self, name: str, total: int, done: int) -> None:
            self.counter = counters[0]
            super().start(name, total, done)

    report = evaluate(request, progress=Progress())
    passes = counters[0].passes
    suite, battery = passes["suite"], passes.get("battery", 0) + passes.get("between", 0)
    budget = report.sanity_budget
    assert budget is not None and budget.mode == "auto"
    assert suite == budget.suite_passes == 20 * (1 + 4)  # clean 1, FGSM 3 + 1 per sample
    assert battery <= budget.battery_passes <= budget.cap_passes == CAP_FACTOR * suite
    assert 0 < battery <= 3 * suite
    assert {r.name for r in report.sanity} >= {"eps0_equals_clean", "monotone_in_eps"}
    assert "black_box_not_stronger" in budget.left_out
    assert budget.wall_time_s > 0
    assert read_report(out).sanity_budget == budget


@pytest.mark.parametrize(
    ("flag", "in_suite", "expected"),
    [(None, None, "auto"), (None, "quick", "quick"), ("full", "quick", "full")],
)
def test_the_flag_beats_the_suite_s_budget_which_beats_auto(
    flag: str | None,
    in_suite: str | None,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from robench.evaluation.request import EvalRequest
    from robench.evaluation.sanity import checks as sanity
    from robench.evaluation.sanity.battery import run_battery
    from robench.evaluation.suites import load_suite

    key = f'sanity_budget = "{in_suite}"\n' if in_suite else ""
    (tmp_path / "s.toml").write_text(_CLEAN_FGSM.replace("version = 1\n", "version = 1\n" + key))
    seen: dict = {}
    monkeypatch.setattr(sanity, "run_sanity", lambda *args, **kwargs: seen.update(kwargs) or [])
    request = EvalRequest(
        suite=str(tmp_path / "s.toml"),
        data="x",
        out=tmp_path / "r.json",
        sanity=True,
        sanity_budget=flag,
    )
    task = load_task("image-classification")
    suite = load_suite(str(tmp_path / "s.toml"))
    _, info = run_battery(request, suite, task, None, None, [0, 1, 2], torch.device("cpu"))  # type: ignore[arg-type]
    assert info is not None and info.mode == expected
    fixed = {"full": FULL_BUDGET, "quick": QUICK_BUDGET}
    if expected in fixed:
        assert seen["budget"] == dataclasses.replace(fixed[expected], samples=3)
    else:  # no suite results to pay for: nothing fits under a cap of 0 passes
        assert info.cap_passes == 0 and seen["budget"].samples == 0


def test_an_unknown_budget_mode_is_one_config_error() -> None:
    from robench._core.errors import ConfigError

    with pytest.raises(ConfigError, match="'fast' is not a sanity budget; choose one of auto"):
        choose_budget("fast", suite_passes=100, available_samples=20, norm="linf")
