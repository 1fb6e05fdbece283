"""`robench eval --dry-run`: what a run would cost, in model passes, without running it.

The plan loads the suite, the model and the data as a run does and attacks nothing; each
result costs its kind's `passes_per_sample_on(classes, shape)` per sample, an upper bound in
the cost model's unit (docs/cost.md: the unit, the bound and the measured ratios), and with a
throughput a real run saved for this device (`planning/throughput.py`), a wall time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from robench._core.model_hooks import supports_adaptive_attack
from robench.evaluation.environment import describe_device
from robench.evaluation.jobs import resolve_jobs
from robench.evaluation.planning.throughput import Throughput, saved_throughput
from robench.evaluation.request import EvalRequest, set_up
from robench.evaluation.runner import EvalData
from robench.evaluation.sanity.battery import threat_model
from robench.evaluation.suites import LoadedSuite
from robench.models.loading import LoadedModel

_DEFAULT_CLASSES = 10  # as the sanity battery: a dataset that names no classes


@dataclass(frozen=True)
class PlannedCost:
    """One result's estimated cost."""

    label: str
    kind: str
    dataset: str
    samples: int
    passes_per_sample: int  # the kind's `passes_per_sample_on(classes, shape)`: an upper bound

    @property
    def passes(self) -> int:
        return self.samples * self.passes_per_sample


@dataclass(frozen=True)
class RunPlan:
    """What `robench eval` would run and its estimated cost; nothing was attacked."""

    model: str
    suite: str
    device: str  # as a report names it: the key of the saved throughput
    classes: int
    results: list[PlannedCost]
    sanity_samples: int = 0  # the battery's samples (0: no battery)
    sanity_passes: int = 0
    throughput: Throughput | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def total_passes(self) -> int:
        return sum(r.passes for r in self.results) + self.sanity_passes

    @property
    def wall_time_s(self) -> float | None:
        """Estimated seconds, from the device's saved throughput; None without one."""
        if self.throughput is None or self.throughput.passes_per_s <= 0:
            return None
        return self.total_passes / self.throughput.passes_per_s


def _sample_shape(source: EvalData) -> tuple[int, ...] | None:
    """One sample's input shape ((C, H, W) for images), read from the first chosen sample;
    None where the input is no tensor (texts) or nothing is chosen."""
    if not len(source.indices):
        return None
    item = source.dataset[source.indices[0]]
    first = item[0] if isinstance(item, tuple | list) else item
    shape = getattr(first, "shape", None)
    return tuple(int(n) for n in shape) if shape is not None else None


def _classes(source: EvalData) -> int:
    if source.output_classes is not None:
        return len(source.output_classes)
    return len(getattr(source.dataset, "classes", ()) or ()) or _DEFAULT_CLASSES


def _battery(
    request: EvalRequest,
    loaded_suite: LoadedSuite,
    loaded: LoadedModel,
    suite_passes: int,
    samples: int,
) -> tuple[int, int, str]:
    """(samples, passes, note) of the sanity battery `request` would run."""
    from robench.evaluation.sanity.budget import battery_cost, check_mode, choose_budget

    suite = loaded_suite.suite
    mode = check_mode(request.sanity_budget or suite.sanity_budget or "auto")
    available = min(samples, suite.sanity_samples or samples)
    if available < 1:
        return 0, 0, ""
    norm, eps = threat_model(request, loaded_suite)
    adaptive = supports_adaptive_attack(loaded.model)
    flags: dict[str, Any] = {"norm": norm, "adaptive": adaptive, "eps": eps}
    budget = choose_budget(mode, suite_passes=suite_passes, available_samples=available, **flags)
    if not budget.samples:
        return 0, 0, f"sanity battery ({mode}): no check fits its cap"
    passes = battery_cost(budget, **flags)
    note = (
        f"sanity battery ({mode}): {budget.samples} samples; a randomized model adds its "
        "EOT check, which only a run can find"
    )
    return budget.samples, passes, note


def plan_run(request: EvalRequest, model: LoadedModel | None = None) -> RunPlan:
    """The run `request` describes, with each result's estimated passes; loads the suite, the
    model and the data (their checks included) but runs no perturbation."""
    s = set_up(request, None, model)
    jobs, missing = resolve_jobs(s.suite.plan, s.data.data, s.suite.suite.datasets, s.data.default)
    classes = _classes(s.data.data[s.data.default])
    results = [
        PlannedCost(
            label=job.planned.label,
            kind=job.planned.kind,
            dataset=key,
            samples=len(job.data.indices),
            passes_per_sample=job.planned.params.passes_per_sample_on(
                _classes(job.data), _sample_shape(job.data)
            ),
        )
        for key, job in jobs
    ]
    notes = [f"not evaluated: {gone.name}: {gone.reason}" for gone in missing]
    if s.request.target_halfwidth is not None or s.suite.suite.target_halfwidth is not None:
        notes.append("sequential: estimated at every sample; the run may stop earlier")
    sanity_samples = sanity_passes = 0
    if s.request.sanity or s.suite.suite.sanity:
        suite_passes = sum(r.passes for r in results)
        default = len(s.data.data[s.data.default].indices)
        sanity_samples, sanity_passes, note = _battery(
            s.request, s.suite, s.loaded, suite_passes, default
        )
        notes += [note] if note else []
    device = describe_device(s.dist.device)
    s.dist.close()
    return RunPlan(
        model=s.loaded.name,
        suite=s.suite.suite.name,
        device=device,
        classes=classes,
        results=results,
        sanity_samples=sanity_samples,
        sanity_passes=sanity_passes,
        throughput=saved_throughput(device, s.loaded.name),
        notes=notes,
    )
