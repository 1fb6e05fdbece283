"""The aggregate registry: numbers computed over a group of results, such as mCE.

An `Aggregate` is registered once with its direction, display and a `plan`: which results of
one dataset it reads (its members, and a clean result for relative mCE) and how it combines
their top-1 accuracies. `compute_aggregates` runs the plans on a report's corruption results,
one group per dataset that holds any, and attaches a 95% bootstrap interval over samples
(`bootstrap.centred_interval`), paired across the members (`aggregate_samples`).
docs/formats.md ("Aggregates") gives the definitions, from AlexNet's errors
(`alexnet_reference`) for the mCE kinds; those are defined for ImageNet-1k only. Torch-free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from robench._core.registry import Registry
from robench.results.report.schema import AggregateResult, PerturbationResult, Report
from robench.results.stats.aggregate_samples import (
    MIOU,
    TOP1,
    Accuracies,
    Block,
    SampleStatistic,
    bootstrap_accuracies,
    point_accuracies,
    shared_block,
)
from robench.results.stats.alexnet_reference import alexnet_reference
from robench.results.stats.bootstrap import centred_interval
from robench.results.stats.metrics import MetricDisplay

# numpy is imported where it is used: `robench compare` reads reports without it.
if TYPE_CHECKING:
    import numpy as np

IMAGENET_CLASSES = 1000
_SHOWN_MISSING = 5  # missing results named in a reason; the rest are counted


@dataclass(frozen=True)
class Plan:
    """What an aggregate reads from one group and how it combines it; or why it cannot."""

    members: list[PerturbationResult]
    clean: PerturbationResult | None = None  # relative mCE's clean result (any dataset)
    # accuracies (result name -> scalar or per-replicate array) -> value (same shape)
    value: Callable[[Accuracies], np.ndarray] | None = None
    # accuracies -> per-corruption numbers (CE, or mean accuracy / error)
    details: Callable[[Accuracies], dict[str, np.ndarray]] | None = None
    reason: str | None = None  # set when the aggregate cannot be computed here


PlanFn = Callable[[Report, str, list[PerturbationResult]], Plan]


@dataclass(frozen=True)
class Aggregate:
    """One aggregate: description, direction, display and how to plan it on a group."""

    name: str
    description: str
    higher_is_better: bool
    display: MetricDisplay
    plan: PlanFn  # (report, dataset, the dataset's corruption results) -> Plan
    # What one member result contributes (its top-1 accuracy, its mIoU) and from which
    # per-sample column; the task whose records hold that column (a suite checks it).
    statistic: SampleStatistic = TOP1
    task: str = "image-classification"


AGGREGATES: Registry[Aggregate] = Registry("aggregate")


def register(aggregate: Aggregate) -> Aggregate:
    return AGGREGATES.register(aggregate.name)(aggregate)


def _add(**fields: Any) -> Aggregate:
    return register(Aggregate(**fields))


def find_aggregate(name: str) -> Aggregate | None:
    """The registered aggregate `name`, or None for one robench does not know."""
    return AGGREGATES.get(name) if name in AGGREGATES else None


def _by_corruption(
    results: Sequence[PerturbationResult],
) -> dict[str, dict[int, PerturbationResult]]:
    """corruption -> severity -> result (the first listed, when one is listed twice)."""
    found: dict[str, dict[int, PerturbationResult]] = {}
    for result in results:
        severity = int(result.params.get("severity", 0))
        found.setdefault(str(result.params["corruption"]), {}).setdefault(severity, result)
    return found


def _error(accuracy: np.ndarray) -> np.ndarray:
    return 1.0 - accuracy


def _imagenet_reason(report: Report, dataset: str, name: str) -> str | None:
    """Why AlexNet-normalised `name` is undefined on `dataset`; None on ImageNet-1k."""
    data = report.datasets[dataset]
    if data.classes == IMAGENET_CLASSES and data.label_space is None:
        return None
    space = f", label space {data.label_space.name!r}" if data.label_space else ""
    return (
        f"AlexNet-normalised {name} is defined for ImageNet-1k (1000 classes, no restricted "
        f"label space); dataset {dataset!r} has {data.classes} classes{space}; see "
        "mean_corruption_error."
    )


VALIDATION_DATASETS = ("clean", "val")  # names of the clean ImageNet validation set


def _clean_for(report: Report, dataset: str) -> tuple[PerturbationResult | None, str | None]:
    """The clean result relative mCE subtracts: the dataset's own, else the only clean
    result on an ImageNet-1k dataset (or the only one on a dataset named in
    VALIDATION_DATASETS); or the reason there is none."""
    cleans = [r for r in report.results if r.kind == "clean"]
    same = [r for r in cleans if r.dataset == dataset]
    if same:
        return same[0], None
    imagenet = [r for r in cleans if _imagenet_reason(report, r.dataset, "") is None]
    # Beside ImageNet-V2 or -Sketch (also 1000 classes), the validation set is the one named
    # "clean" or "val", as the shipped suites name it.
    validation = [r for r in imagenet if r.dataset in VALIDATION_DATASETS]
    if len(imagenet) == 1 or len(validation) == 1:
        return (validation or imagenet)[0], None
    found = "several" if imagenet else "no"
    return None, (
        f"relative mCE needs the model's clean ImageNet error and the report has {found} "
        f"clean result on an ImageNet-1k dataset besides {dataset!r}; add a `clean` entry to "
        "the suite and pass the clean ImageNet validation folder (--data NAME=PATH)."
    )


def _missing_text(missing: list[str], needed: int, what: str) -> str:
    shown = ", ".join(missing[:_SHOWN_MISSING])
    more = f" and {len(missing) - _SHOWN_MISSING} more" if len(missing) > _SHOWN_MISSING else ""
    return f"needs all {needed} {what} results; {len(missing)} missing: {shown}{more}."


def _normalised(which: str, relative: bool, name: str) -> PlanFn:
    """The plan of mCE (`which` = "standard" or "extra"), relative or not."""

    def plan(report: Report, dataset: str, results: list[PerturbationResult]) -> Plan:
        import numpy as np

        reason = _imagenet_reason(report, dataset, name)
        if reason is not None:
            return Plan([], reason=reason)
        ref = alexnet_reference()
        found = _by_corruption(results)
        needed = [(c, s) for c in ref.sets[which] for s in ref.severities(c)]
        missing = [f"{c}-{s}" for c, s in needed if s not in found.get(c, {})]
        if missing:
            what = f"{len(ref.sets[which])} {which} corruptions x severities"
            return Plan([], reason=f"{name} {_missing_text(missing, len(needed), what)}")
        clean = None
        if relative:
            clean, reason = _clean_for(report, dataset)
            if clean is None:
                return Plan([], reason=reason)
        groups = {c: [found[c][s] for s in ref.severities(c)] for c in ref.sets[which]}

        def details(acc: Accuracies) -> dict[str, np.ndarray]:
            ces = {}
            for corruption, members in groups.items():
                model = sum(_error(acc[r.name]) for r in members)
                alexnet = sum(ref.errors[corruption, s] for s in ref.severities(corruption))
                if clean is not None:
                    model = model - len(members) * _error(acc[clean.name])
                    alexnet -= len(members) * ref.clean_error
                ces[corruption] = np.asarray(model / alexnet)
            return ces

        def value(acc: Accuracies) -> np.ndarray:
            return np.mean(list(details(acc).values()), axis=0)

        members = [r for group in groups.values() for r in group]
        return Plan(members, clean, value, details)

    return plan


def _mean_over_results(error: bool) -> PlanFn:
    """The plan of the mean corruption accuracy (or error) over every result of the group."""

    def plan(report: Report, dataset: str, results: list[PerturbationResult]) -> Plan:
        import numpy as np

        if not results:
            return Plan([], reason=f"dataset {dataset!r} has no corruption results.")
        flip: Callable[[np.ndarray], np.ndarray] = _error if error else np.asarray
        groups: dict[str, list[str]] = {}
        for result in results:
            groups.setdefault(str(result.params["corruption"]), []).append(result.name)

        def details(acc: Accuracies) -> dict[str, np.ndarray]:
            return {
                c: np.mean([flip(acc[n]) for n in names], axis=0) for c, names in groups.items()
            }

        def value(acc: Accuracies) -> np.ndarray:
            return np.mean([flip(acc[r.name]) for r in results], axis=0)

        return Plan(list(results), None, value, details)

    return plan


# AlexNet-normalised: stored as a fraction (AlexNet = 1.0), shown x100 without a unit.
for _name, _which, _relative, _label, _text in (
    ("mce", "standard", False, "mCE", "mean corruption error over the 15 ImageNet-C corruptions"),
    ("relative_mce", "standard", True, "rel. mCE", "relative mCE over the 15 corruptions"),
    ("extra_mce", "extra", False, "extra mCE", "mCE over the 4 extra ImageNet-C corruptions"),
):
    _add(
        name=_name,
        description=f"{_text}, AlexNet = 100 (lower is better)",
        higher_is_better=False,
        display=MetricDisplay(_label, scale=100.0),
        plan=_normalised(_which, _relative, _name),
    )
for _is_error, _what, _label in ((False, "accuracy", "acc."), (True, "error", "err.")):
    _add(
        name=f"mean_corruption_{_what}",
        description=f"top-1 {_what} averaged over every corruption x severity result",
        higher_is_better=not _is_error,
        display=MetricDisplay(f"mean corr. {_label}", scale=100.0, unit="%", diff_unit="pp"),
        plan=_mean_over_results(error=_is_error),
    )
_add(
    name="mean_corruption_miou",
    description="mIoU averaged over every corruption x severity result (segmentation)",
    higher_is_better=True,
    display=MetricDisplay("mean corr. mIoU", scale=100.0, unit="%", diff_unit="pp"),
    plan=_mean_over_results(error=False),
    statistic=MIOU,
    task="semantic-segmentation",
)


def corruption_groups(report: Report) -> dict[str, list[PerturbationResult]]:
    """dataset -> its corruption results, in report order."""
    groups: dict[str, list[PerturbationResult]] = {}
    for result in report.results:
        if result.kind == "corruption" and "corruption" in result.params:
            groups.setdefault(result.dataset, []).append(result)
    return groups


def group_name(name: str, dataset: str, n_groups: int) -> str:
    """`mce` when one dataset holds corruption results, else `mce@imagenet-c`."""
    return name if n_groups <= 1 else f"{name}@{dataset}"


def plan_blocks(
    report: Report, dataset: str, plan: Plan, statistic: SampleStatistic = TOP1
) -> tuple[list[Block], str | None] | None:
    """The plan's per-sample blocks (members and a same-dataset clean share one; a clean
    result on another dataset gets its own) and a caveat; None without per-sample values."""
    shared = plan.members + ([plan.clean] if plan.clean and plan.clean.dataset == dataset else [])
    found = shared_block(report, dataset, shared, statistic)
    if found is None:
        return None
    blocks, caveat = [found[0]], found[1]
    if plan.clean is not None and plan.clean.dataset != dataset:
        other = shared_block(report, plan.clean.dataset, [plan.clean], statistic)
        if other is None:
            return None
        blocks.append(other[0])
    return blocks, caveat


def _result(aggregate: Aggregate, name: str, dataset: str, plan: Plan, **fields) -> AggregateResult:
    return AggregateResult(
        name=name,
        kind=aggregate.name,
        dataset=dataset,
        members=[r.name for r in plan.members],
        higher_is_better=aggregate.higher_is_better,
        **({"value": None, "ci95": None, "reason": plan.reason} | fields),
    )


def compute_one(
    report: Report, aggregate: Aggregate, name: str, dataset: str, n_boot: int, seed: int
) -> AggregateResult:
    """`aggregate` on `dataset`'s corruption results, with its bootstrap interval."""
    results = corruption_groups(report).get(dataset, [])
    plan = aggregate.plan(report, dataset, results)
    if plan.reason is not None or plan.value is None or plan.details is None:
        return _result(aggregate, name, dataset, plan)
    found = plan_blocks(report, dataset, plan, aggregate.statistic)
    if found is None:
        label = aggregate.statistic.label
        reason = f"the report stores no per-sample {label} values of its members."
        return _result(aggregate, name, dataset, plan, reason=reason)
    blocks, caveat = found
    point = point_accuracies(blocks)
    value = float(plan.value(point))
    replicates = plan.value(bootstrap_accuracies(blocks, n_boot, seed))
    low, high = centred_interval(value, replicates)
    ci95 = (float(low), float(high))
    details = {c: float(v) for c, v in plan.details(point).items()}
    return _result(
        aggregate, name, dataset, plan, value=value, ci95=ci95, reason=caveat, details=details
    )


def compute_aggregates(
    report: Report, names: Sequence[str], *, n_boot: int = 1000, seed: int = 0
) -> list[AggregateResult]:
    """Every aggregate in `names` on every dataset of `report` that has corruption results
    (one result per name and dataset; a name with no such dataset gives one result whose
    value is None). `n_boot` bootstrap replicates, deterministic for a `seed`."""
    aggregates = [AGGREGATES.get(name) for name in names]  # unknown names: did-you-mean
    groups = list(corruption_groups(report)) or [next(iter(report.datasets))]
    return [
        compute_one(report, agg, group_name(agg.name, dataset, len(groups)), dataset, n_boot, seed)
        for agg in aggregates
        for dataset in groups
    ]
