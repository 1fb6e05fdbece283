"""The sanity battery as a step of `evaluate`: its threat model and budget chosen from the
suite and the flags, its results and its cost for the report (docs/sanity.md)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch import nn
from torch.utils.data import Dataset

from robench._core.model_hooks import supports_adaptive_attack
from robench._core.progress import Progress
from robench.evaluation.suites import LoadedSuite
from robench.perturbations.threat_models import NORMS
from robench.results.report.schema import PerturbationResult, SanityBudgetInfo, SanityResult
from robench.tasks.base import Task

logger = logging.getLogger(__name__)

DEFAULT_SANITY_EPS = 8 / 255


class BatteryRequest(Protocol):
    """What the battery reads of a request (an `EvalRequest` is one)."""

    sanity: bool
    sanity_eps: float | None
    sanity_budget: str | None
    seed: int
    batch_size: int


def threat_model(request: BatteryRequest, loaded_suite: LoadedSuite) -> tuple[str, float]:
    """The battery's threat model: L2 when every bounded entry is L2, else L-inf; its budget
    is the flag's, else the suite's, else the largest eps of that norm (an L2 eps never
    becomes an L-inf budget)."""
    budgets: dict[str, list[float]] = {}  # norm -> the eps of the suite's bounded entries
    for planned in loaded_suite.plan:
        if planned.eps is not None and planned.norm is not None:
            budgets.setdefault(planned.norm, []).append(planned.eps)
    norm = "l2" if set(budgets) == {"l2"} else "linf"
    default_eps = {"linf": DEFAULT_SANITY_EPS, "l2": 0.5}[norm]  # 0.5: RobustBench's L2
    suite = loaded_suite.suite
    eps = request.sanity_eps or suite.sanity_eps or max(budgets.get(norm, [0.0])) or default_eps
    return norm, eps


def run_battery(
    request: BatteryRequest,
    loaded_suite: LoadedSuite,
    task: Task,
    model: nn.Module,
    dataset: Dataset,
    indices: list[int],
    device: torch.device,
    progress: Progress | None = None,
    suite_results: Sequence[PerturbationResult] = (),
    randomized: bool = False,
) -> tuple[list[SanityResult], SanityBudgetInfo | None]:
    """The battery's results and its budget, chosen by `--sanity-budget` from the cost of
    `suite_results` (`randomized`: the model check found the model randomized)."""
    suite = loaded_suite.suite
    if not (request.sanity or suite.sanity):
        return [], None
    from robench.evaluation.sanity.budget import (
        EOT,
        budget_info,
        check_mode,
        choose_budget,
        suite_cost,
    )
    from robench.evaluation.sanity.checks import run_sanity

    mode = check_mode(request.sanity_budget or suite.sanity_budget or "auto")
    available = indices[: suite.sanity_samples]
    if not available:
        return [], None

    norm, eps = threat_model(request, loaded_suite)
    classes = len(getattr(dataset, "classes", ())) or 10
    suite_passes = suite_cost(
        loaded_suite.plan, {r.name: r.n_samples for r in suite_results}, classes
    )
    flags: dict[str, Any] = {  # what the battery's cost depends on
        "norm": norm,
        "adaptive": supports_adaptive_attack(model),
        "randomized": randomized,
        "eps": eps,
    }
    budget = choose_budget(
        mode, suite_passes=suite_passes, available_samples=len(available), **flags
    )
    started = time.perf_counter()
    results = run_sanity(
        model,
        dataset,
        available,
        eps=eps,
        seed=request.seed,
        batch_size=request.batch_size,
        device=device,
        budget=budget,
        on_step=lambda name: logger.info("sanity battery: %s", name),
        task=task,
        norm=norm,
        progress=progress,
        randomized=randomized if mode == "auto" else None,  # auto: only what it planned
    )
    # full and quick run EOT whenever the battery finds the model randomized: count it then.
    flags["randomized"] = randomized or any(r.name == EOT for r in results)
    seconds = time.perf_counter() - started
    info = budget_info(budget, mode, suite_passes=suite_passes, wall_time_s=seconds, **flags)
    _log(results, info, NORMS[norm].budget_display(eps), mode, suite_passes)
    return results, info


def _log(
    results: list[SanityResult], info: SanityBudgetInfo, budget: str, mode: str, suite: int
) -> None:
    """One line for the battery's cost, one per warning it found."""
    logger.info(
        "sanity battery: %s, budget %s: %d samples, about %d model passes (the suite: %d)",
        budget,
        mode,
        info.samples,
        info.battery_passes,
        suite,
    )
    for result in results:
        if result.status == "warn":
            logger.warning("sanity: %s: %s", result.name, result.detail)
