"""The minimal-norm kind (FMN, FAB), the first-success columns, and the curves read from them:
FMN finds a linear model's exact boundary distance, norms follow the documented convention,
the checks warn where they should, `compare --at-eps` and the page read the curves."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from robench.cli import app
from robench.perturbations.adversarial.first_success import FirstWrong
from robench.perturbations.adversarial.fmn import fmn
from robench.perturbations.base import build_perturbation
from robench.results.compare.html.figures import curve_figures
from robench.results.report.schema import MetricValue, PerturbationResult, Report
from robench.results.stats.curve_checks import check_convergence, check_minimal_norm
from robench.results.stats.metrics import wilson_interval
from robench.results.stats.robustness_curves import (
    accuracy_at,
    accuracy_at_results,
    eps_curve,
    iteration_curve,
)
from tests.report_factory import make_report


class _Linear(nn.Module):
    """Two classes, logit difference w . x + b: the boundary distance is known exactly."""

    def __init__(self, w: torch.Tensor, b: float) -> None:
        super().__init__()
        self.w, self.b = w, b

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x.flatten(1) @ self.w.flatten() + self.b  # (B,)
        return torch.stack([d, -d], dim=1) / 2  # margin of class 0 = d


def _linear_case() -> tuple[_Linear, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    w = torch.randn(1, 6, 6, generator=g)
    images = 0.4 + 0.2 * torch.rand(8, 1, 6, 6, generator=g)  # away from the box's faces
    b = 0.5 - float((images.flatten(1) @ w.flatten()).min())  # every sample is class 0
    return _Linear(w, b), images, torch.zeros(8, dtype=torch.long)


@pytest.mark.parametrize(("norm", "dual"), [("l2", 2.0), ("linf", 1.0)])
def test_fmn_finds_the_distance_to_a_linear_boundary(norm: str, dual: float) -> None:
    model, images, labels = _linear_case()
    margin = images.flatten(1) @ model.w.flatten() + model.b  # (B,) > 0
    exact = margin / model.w.flatten().norm(p=dual)
    step = 1.0 if norm == "l2" else 10.0
    found = fmn(model, images, labels, norm=norm, steps=200, step_size=step, gamma=0.05)
    assert torch.all(torch.isfinite(found.norm))
    assert torch.all(found.norm >= exact * (1 - 1e-4))  # never below the true minimum
    assert torch.all(found.norm <= exact * 1.05)  # within 5% of it
    assert torch.all(model(found.best).argmax(1) != labels)


def test_fmn_norms_are_zero_for_wrong_and_inf_for_never_fooled() -> None:
    model, images, labels = _linear_case()
    wrong = fmn(model, images, torch.ones_like(labels), norm="l2", steps=5, step_size=1.0,
                gamma=0.05)  # fmt: skip
    assert torch.all(wrong.norm == 0) and torch.all(wrong.first_success == 0)

    class Constant(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.tensor([[1.0, 0.0]]).expand(x.shape[0], 2) + 0 * x.flatten(1)[:, :2]

    never = fmn(Constant(), images, labels, norm="linf", steps=5, step_size=1.0, gamma=0.05)
    assert torch.all(torch.isinf(never.norm)) and torch.all(never.first_success == -1)


@pytest.mark.parametrize("method", ["fmn", "fab"])
def test_minimal_norm_kind_columns_and_ball(method: str) -> None:
    model, images, labels = _linear_case()
    cap = 0.05
    attack = build_perturbation(
        "minimal-norm", {"eps": cap, "norm": "linf", "method": method, "steps": 50}
    )
    adv, columns = attack.perturb_with_columns(model, images, labels, seed=0)
    again, columns_again = attack.perturb_with_columns(model, images, labels, seed=0)
    assert torch.equal(adv, again) and columns == columns_again
    assert (adv - images).abs().amax() <= cap + 1e-6
    norms = [math.inf if n is None else n for n in columns["min_norm"]]
    inside = torch.tensor([n <= cap for n in norms])
    wrong = model(adv).argmax(1) != labels
    assert torch.equal(wrong, inside)  # scored adversarial exactly where the norm <= cap
    assert ("first_success" in columns) == (method == "fmn")


def test_first_wrong_records_the_first_wrong_call() -> None:
    model, images, labels = _linear_case()
    recorder = FirstWrong(model, labels)
    recorder(images)  # call 0: all right
    recorder(torch.where(torch.arange(8)[:, None, None, None] < 3, 1 - images, images))
    flipped = recorder.column()[:3]
    assert recorder.column()[3:] == [None] * 5
    assert all(k in (1, None) for k in flipped)
    recorder(images[:2])  # a part of the batch is not an iterate
    assert recorder.calls == 2


def _curve_report(norms: list[float | None], pgd: dict[str, float], steps: int = 10) -> Report:
    """A report with a minimal-norm result (cap 4/255) of `norms` and PGD results at eps."""
    n = len(norms)
    report = make_report(accuracies={"clean": 1.0}, n=n)
    cap = 4 / 255
    robust = [v is None or v > cap for v in norms]
    results = list(report.results)
    values = dict(report.samples["default"].values)
    first = [None if v is None or v > cap else min(steps, int(v * 255 * 2)) for v in norms]
    results.append(
        PerturbationResult(
            name="fmn",
            kind="minimal-norm",
            params={"eps": cap, "norm": "linf", "method": "fmn", "steps": steps},
            n_samples=n,
            metrics={
                "top1": MetricValue(
                    value=sum(robust) / n,
                    ci95=wilson_interval(sum(robust), n),
                    higher_is_better=True,
                )
            },
            wall_time_s=1.0,
        )
    )
    values["fmn"] = {"top1": robust, "min_norm": norms, "first_success": first}
    for eps, accuracy in pgd.items():
        k = round(accuracy * n)
        name = f"pgd@{eps:.4f}"
        results.append(
            PerturbationResult(
                name=name,
                kind="pgd",
                params={"eps": eps, "norm": "linf", "steps": steps},
                n_samples=n,
                metrics={
                    "top1": MetricValue(
                        value=k / n, ci95=wilson_interval(k, n), higher_is_better=True
                    )
                },
                wall_time_s=1.0,
            )
        )
        values[name] = {"top1": [j < k for j in range(n)]}
    samples = report.samples["default"].model_copy(update={"values": values})
    return report.model_copy(update={"results": results, "samples": {"default": samples}})


def test_accuracy_at_eps_counts_robust_only_above_the_norm() -> None:
    norms = [0.0, 1 / 255, 2 / 255, math.inf]
    assert accuracy_at(norms, 0.0)[0] == 0.75
    assert accuracy_at(norms, 1 / 255)[0] == 0.5  # norm == eps is not robust
    assert accuracy_at(norms, 1 / 255)[1] == wilson_interval(2, 4)
    report = _curve_report([0.0, 1 / 255, 2 / 255, None], {})
    curve = eps_curve(report, report.results[-1])
    assert curve.x[0] == 0 and curve.x[-1] == pytest.approx(4 / 255)
    assert curve.value[0] == 0.75 and curve.value[-1] == 0.25
    assert all(a >= b for a, b in zip(curve.value, curve.value[1:], strict=False))


def test_iteration_curve_counts_the_last_step_from_the_rerun() -> None:
    report = _curve_report([None] * 4, {})
    values = report.samples["default"].values
    values["fmn"]["first_success"] = [0, 3, None, None]
    values["fmn"]["top1"] = [False, False, False, True]  # sample 2: wrong only at the end
    curve = iteration_curve(report, report.results[-1])
    assert curve is not None
    assert curve.value[:3] == [0.75, 0.75, 0.75] and curve.value[3] == 0.5
    assert curve.value[-2] == 0.5 and curve.value[-1] == 0.25


def test_minimal_norm_weaker_than_pgd_warns() -> None:
    norms = [None] * 90 + [0.0] * 10  # the curve stays at 90% up to the cap
    agree = check_minimal_norm(_curve_report(norms, {2 / 255: 0.88}))
    assert [c.status for c in agree] == ["pass"]
    weak = check_minimal_norm(_curve_report(norms, {2 / 255: 0.5, 8 / 255: 0.1}))
    assert [c.status for c in weak] == ["warn"]  # 8/255 is above the cap: not compared
    assert "weaker than PGD" in weak[0].detail


def test_convergence_warns_when_still_falling() -> None:
    flat = _curve_report([1 / 255] * 5 + [None] * 5, {})
    assert {c.status for c in check_convergence(flat)} == {"pass"}
    falling = _curve_report([1 / 255] * 5 + [None] * 5, {})
    falling.samples["default"].values["fmn"]["first_success"] = [1, 2, 3, 9, 10] + [None] * 5
    (check,) = check_convergence(falling)
    assert check.status == "warn" and "not converged" in check.detail


def test_convergence_is_not_judged_below_ten_iterations() -> None:
    """A 5-step attack (the smoke suite's PGD-5) is a quick check: its curve still falls in
    its last step on any model, and a warning saying so would be noise on every smoke run."""
    falling = _curve_report([1 / 255] * 5 + [None] * 5, {}, steps=5)
    falling.samples["default"].values["fmn"]["first_success"] = [1, 2, 3, 4, 5] + [None] * 5
    assert [c for c in check_convergence(falling) if c.name.startswith("converged")] == []
    judged = _curve_report([1 / 255] * 5 + [None] * 5, {}, steps=10)
    judged.samples["default"].values["fmn"]["first_success"] = [1, 2, 3, 9, 10] + [None] * 5
    assert [c.status for c in check_convergence(judged)] == ["warn"]


def test_compare_at_eps_and_the_page(tmp_path: Path) -> None:
    report = _curve_report([0.0, 1 / 255, 2 / 255, None], {2 / 255: 0.25})
    path = tmp_path / "r.json"
    path.write_text(report.model_dump_json())
    runner = CliRunner()
    shown = runner.invoke(app, ["compare", str(path), "--at-eps", "1/255", "-f", "json"])
    assert shown.exit_code == 0, shown.output
    assert "fmn@1/255" in shown.stdout
    (extra,) = accuracy_at_results(report, [1 / 255])
    assert extra.metrics["top1"].value == 0.5
    beyond = runner.invoke(app, ["compare", str(path), "--at-eps", "5/255"])
    assert beyond.exit_code == 2 and "cap is 4/255" in beyond.output
    titles = [f.title for f in curve_figures({"m": report})]
    assert titles == [
        "Accuracy against the L∞ budget, minimal norms",
        "Accuracy against attack iterations",
    ]
    assert (
        json.loads(report.model_dump_json())["samples"]["default"]["values"]["fmn"]["min_norm"][-1]
        is None
    )


def test_eval_keeps_the_attack_columns_and_checks_them(tmp_path: Path) -> None:
    """The runner stores what the attacks return per sample and the report keeps it."""
    suite = tmp_path / "s.toml"
    suite.write_text(
        'name = "s"\nversion = 1\ndescription = "d"\n'
        '[[perturbations]]\nkind = "minimal-norm"\nname = "fmn"\neps = "8/255"\nsteps = 10\n'
        '[[perturbations]]\nkind = "pgd"\nname = "pgd"\neps = "2/255"\nsteps = 3\n'
    )
    out = tmp_path / "r.json"
    args = ["eval", "vit_nano_fmnist", "-s", str(suite), "--limit", "8", "-b", "4", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = Report.model_validate_json(out.read_text())
    norms = report.sample_values("fmn", "min_norm")
    first = report.sample_values("fmn", "first_success")
    correct = report.sample_values("fmn", "top1")
    assert norms is not None and first is not None and correct is not None and len(norms) == 8
    cap = 8 / 255
    assert [n is not None and n <= cap for n in norms] == [not ok for ok in correct]
    assert [k is not None for k in first] == [not ok for ok in correct]
    pgd_first = report.sample_values("pgd", "first_success")
    assert pgd_first is not None and all(k is None or 0 <= k < 3 for k in pgd_first)
    names = {c.name.split(":")[0] for c in report.checks}
    assert {"minimal_norm_at_most_pgd", "converged"} <= names
