"""The metric registry: everything robench knows about one metric, in one place.

Each registered `Metric` says how to compute it from a stored per-sample record, how to
aggregate the per-sample values into the reported value, which 95% interval to report, which
direction is better, how tables show it, how `robench gate` pairs it across two reports and
what drop the gate allows when its policy has no rule for it (`gate_tolerance`). `evaluate`,
`tables`, `compare` and `gate` take every property of a metric from this registry, never from
its name (the gate's default policy adds one rule of its own: clean top-1 may drop 1 pp); a
metric found in a report but not registered here (e.g. from an older robench) is shown raw
and is not tested per sample.

Accuracies are fractions in [0, 1] computed from per-sample predictions, so a resumed run
and an uninterrupted one give the same numbers, and a gate can pair samples across runs.
Ratio-of-sums metrics (perplexity over windows): docs/architecture.md, "Ratio-of-sums
metrics". Torch-free.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from robench._core.registry import Registry
from robench.results.report.schema import Report
from robench.results.stats import certificates
from robench.results.stats.bootstrap import Z_95 as Z_95
from robench.results.stats.calibration import CalibrationError, mean_bootstrap_interval
from robench.results.stats.paired_statistic import PairedStatistic
from robench.results.stats.ratio_statistics import MedianOfMarked, RatioOfSums
from robench.results.stats.segmentation_metrics import CountsStatistic

# numpy is imported where it is used: `robench compare` reads reports without it.
if TYPE_CHECKING:
    import numpy as np


# A sample's value: correct or not, a real number, or a (numerator, denominator) pair of a
# ratio-of-sums metric (a window's NLL and its token count).
PerSampleValue = bool | float | tuple[float, float]
# A task's stored per-sample record (image classification: {"y": label, "topk": [...]}).
Record = Mapping[str, Any]
PerSampleFn = Callable[[Record], PerSampleValue]
AggregateFn = Callable[[Sequence[PerSampleValue]], float]
IntervalFn = Callable[[Sequence[PerSampleValue]], tuple[float, float]]
ReportValuesFn = Callable[[Report, str], "np.ndarray | None"]  # (report, perturbation)
# "binary": exact McNemar; "real": paired bootstrap of the mean; "statistic": paired bootstrap
# of the metric's own `statistic` (a ratio of sums) over samples.
PairedKind = Literal["binary", "real", "statistic"]


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion; (0, 1) when n == 0.

    Preferred over the normal approximation because it stays inside [0, 1] and behaves at
    accuracies near 0 or 1, which robust accuracy under strong attacks often is.
    """
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # The score test accepts p itself, so the interval holds p; rounding alone can put p a
    # hair outside it (1.0 above an upper end of 0.9999999999999998): keep p inside.
    return (min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half)))


def mean(values: Sequence[PerSampleValue]) -> float:
    """Mean of per-sample values; 0.0 for no samples. For booleans: successes / n."""
    return sum(values) / len(values) if values else 0.0  # type: ignore[arg-type]


def wilson(values: Sequence[PerSampleValue]) -> tuple[float, float]:
    """Wilson score 95% interval of binary per-sample values."""
    return wilson_interval(int(sum(values)), len(values))  # type: ignore[arg-type]


@dataclass(frozen=True)
class MetricDisplay:
    """How a metric is shown: reports store accuracies as fractions, tables show percent."""

    label: str  # column header text
    scale: float = 1.0  # shown value = stored value * scale
    unit: str = ""  # "%" for percentages, "" for raw values
    diff_unit: str = ""  # unit of a difference: "pp" (percentage points) or ""


@dataclass(frozen=True)
class GateTolerance:
    """The drop `robench gate` allows a metric when no rule of the policy names it (both set:
    both must hold), for metrics whose stored units make the policy's default drop (0.02, two
    points of an accuracy) meaningless: 0.02 perplexity points."""

    max_abs_drop: float | None = None  # in stored units
    max_rel_drop: float | None = None  # a fraction of the baseline: 0.02 = 2%


@dataclass(frozen=True)
class Metric:
    """One metric: computation, aggregation, interval, direction, display and paired test.

    `aggregate` turns the per-sample values of one perturbation into the reported value
    (the mean by default). A number over several results, such as mCE over the corruptions
    of a suite, is not a metric: it is an `Aggregate` (`results/stats/aggregates.py`, where mCE,
    relative mCE and the mean corruption accuracy are registered).
    """

    name: str
    description: str
    higher_is_better: bool
    per_sample: PerSampleFn  # the task's stored record -> per-sample value
    display: MetricDisplay
    # The task(s) whose records `per_sample` reads (top-1 reads image and text classifiers').
    task: str | tuple[str, ...] = "image-classification"
    # A record column the metric needs: results whose records lack it (an attack metric on
    # the clean result) do not report the metric.
    requires: str | None = None
    # What it needs of a task's records, in words, for the error when a suite of another task
    # asks for it ("class probabilities per sample").
    needs: str | None = None
    # How `robench gate` pairs it: "binary" -> exact McNemar, "real" -> paired bootstrap.
    paired_test: PairedKind = "binary"
    # Reads its per-sample values of one result from a report; by default the report's
    # per-sample column named after the metric (`Report.sample_values`).
    report_values: ReportValuesFn | None = None
    aggregate: AggregateFn = mean
    interval: IntervalFn = wilson  # 95% interval of the aggregate
    # For paired_test "statistic": the value of a set of samples' values (a ratio of sums).
    statistic: PairedStatistic | None = None
    # The gate's allowed drop when no policy rule matches; None: the policy's `default`.
    gate_tolerance: GateTolerance | None = None
    # A metric reported at each value of a list in a result's parameters (certified accuracy
    # at each radius of `radii`): one metric `NAME@VALUE` per value, whose per-sample value
    # is `per_sample_at(record, value)` (`at`, `expand`). None: a plain metric.
    points: str | None = None
    per_sample_at: Callable[[Record, float], PerSampleValue] | None = None

    def summarize(self, values: Sequence[PerSampleValue]) -> tuple[float, tuple[float, float]]:
        """The reported value and 95% interval of these per-sample values."""
        return self.aggregate(values), self.interval(values)

    @property
    def tasks_text(self) -> str:
        """The tasks it applies to, in words: "image-classification or text-classification"."""
        return " or ".join(self.task) if isinstance(self.task, tuple) else self.task

    def applies_to(self, task: str) -> bool:
        """Whether it reads `task`'s records."""
        return task in self.task if isinstance(self.task, tuple) else task == self.task

    def at(self, point: float) -> Metric:
        """The member `NAME@POINT` of a metric with `points` (`certified_accuracy@0.25`)."""
        if self.per_sample_at is None:
            raise ValueError(f"metric {self.name!r} is not reported at points")
        per_sample_at, shown = self.per_sample_at, f"{point:g}"
        return replace(
            self,
            name=f"{self.name}@{shown}",
            per_sample=lambda record: per_sample_at(record, point),
            display=replace(self.display, label=f"{self.display.label}@{shown}"),
            points=None,
            per_sample_at=None,
        )

    def expand(self, params: Mapping[str, Any]) -> list[Metric]:
        """What a result with these parameters reports of it: itself, or one member per
        value of its `points` list (none when the result has no such list)."""
        if self.points is None:
            return [self]
        listed = params.get(self.points)
        return [self.at(float(p)) for p in listed] if isinstance(listed, list | tuple) else []

    def values_in(self, report: Report, result: str) -> Sequence[Any] | np.ndarray | None:
        """Its per-sample values of `result` in `report`, for paired tests; None if absent.
        Pairs of a ratio-of-sums metric come as (numerator, denominator) rows. As stored (a
        list), so that a gate of binary metrics needs no numpy."""
        if self.report_values is not None:
            return self.report_values(report, result)
        return report.sample_values(result, self.name)


METRICS: Registry[Metric] = Registry("metric")


def register(metric: Metric) -> Metric:
    """Add `metric` to the registry (a name may be registered once)."""
    return METRICS.register(metric.name)(metric)


def extended_registry(*extra: Metric) -> Registry[Metric]:
    """A copy of the registry with `extra` metrics added, e.g. to try a metric in a test
    (`monkeypatch.setattr(metrics, "METRICS", extended_registry(m))`) without registering it
    for good."""
    registry: Registry[Metric] = Registry(METRICS.what)
    for metric in [*(METRICS.get(name) for name in METRICS), *extra]:
        registry.register(metric.name)(metric)
    return registry


def find_metric(name: str) -> Metric | None:
    """The registered metric `name` (or `NAME@POINT`, a member of a metric with `points`),
    or None for a metric robench does not know."""
    if name in METRICS:
        return METRICS.get(name)
    base, _, point = name.partition("@")
    family = METRICS.get(base) if point and base in METRICS else None
    if family is None or family.points is None:
        return None
    try:
        value = float(point)
    except ValueError:
        return None
    member = family.at(value) if math.isfinite(value) else None
    return member if member is not None and member.name == name else None


def metrics_for_task(task: str) -> list[str]:
    """Names of the registered metrics computed from `task`'s per-sample records."""
    return [name for name in METRICS if METRICS.get(name).applies_to(task)]


def metric_display(name: str) -> MetricDisplay:
    """How `name` is shown; metrics not in the registry are shown raw under their name."""
    metric = find_metric(name)
    return metric.display if metric is not None else MetricDisplay(name)


def higher_is_better(name: str, stored: bool) -> bool:
    """The direction of `name`: the registry's; `stored` (the report's) if not registered."""
    metric = find_metric(name)
    return metric.higher_is_better if metric is not None else stored


def _exp(values: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.exp(values)


def _add(**fields: Any) -> Metric:
    """Register `Metric(**fields)`."""
    return register(Metric(**fields))


def _add_statistic(
    statistic: RatioOfSums | CountsStatistic | CalibrationError, **fields: Any
) -> Metric:
    """Register a metric whose value, interval and paired test are `statistic`'s (a ratio of
    sums, a median of marked samples, ratios of counts): not a mean of per-sample values."""
    return _add(
        paired_test="statistic",
        aggregate=statistic,
        interval=statistic.interval,
        statistic=statistic,
        **fields,
    )


def _top_k(k: int) -> PerSampleFn:
    return lambda record: record["y"] in record["topk"][:k]


for _k in (1, 5):
    _add(
        name=f"top{_k}",
        description=f"top-{_k} accuracy (fraction of samples)",
        higher_is_better=True,
        per_sample=_top_k(_k),
        display=MetricDisplay(f"top-{_k}", scale=100.0, unit="%", diff_unit="pp"),
        task=("image-classification", "text-classification", "sequence-classification"),
    )


# Calibration of a classifier (docs/formats.md, "Calibration metrics"), from the four scalars
# its record keeps (tasks/top_k_records.py). Records without the scalars (an older sample
# store resumed) do not report them (`requires`).
_CLASSIFIERS = ("image-classification", "text-classification")
_ECE = CalibrationError()


def _confidence_and_correct(record: Record) -> tuple[float, float]:
    return (record["p_pred"], float(record["topk"][0] == record["y"]))


def _brier(record: Record) -> float:
    # sum_k (p_k - [k == y])^2 = sum_k p_k^2 - 2 p_y + 1
    return float(record["p_sumsq"] - 2.0 * record["p_target"] + 1.0)


_add_statistic(
    _ECE,
    name="ece",
    description="expected calibration error: 15 equal-width confidence bins, L1, as Guo et "
    "al. 2017 and torchmetrics' MulticlassCalibrationError (lower is better)",
    higher_is_better=False,
    per_sample=_confidence_and_correct,  # the report's `ece` column: [p_pred, correct]
    display=MetricDisplay("ECE", scale=100.0, unit="%", diff_unit="pp"),
    task=_CLASSIFIERS,
    requires="p_pred",
    needs="class probabilities per sample",
    gate_tolerance=GateTolerance(max_abs_drop=0.02),  # 2 pp of calibration error
)
_add(
    name="nll",
    description="negative log-likelihood of the true class, mean over samples in nats "
    "(lower is better)",
    higher_is_better=False,
    per_sample=lambda record: -float(record["logp_target"]),
    display=MetricDisplay("NLL"),
    task=_CLASSIFIERS,
    requires="logp_target",
    needs="class probabilities per sample",
    paired_test="real",
    interval=lambda values: mean_bootstrap_interval(values, (0.0, math.inf)),
    # Nats have no fixed scale (0.2 clean, 5 under attack): a drop relative to the baseline.
    gate_tolerance=GateTolerance(max_rel_drop=0.05),
)
_add(
    name="brier",
    description="multiclass Brier score sum_k (p_k - [k == y])^2, mean over samples, in "
    "[0, 2] (lower is better)",
    higher_is_better=False,
    per_sample=_brier,
    display=MetricDisplay("Brier"),
    task=_CLASSIFIERS,
    requires="p_sumsq",
    needs="class probabilities per sample",
    paired_test="real",
    interval=lambda values: mean_bootstrap_interval(values, (0.0, 2.0)),
    gate_tolerance=GateTolerance(max_abs_drop=0.02),
)


# Language modelling: a window's record is {"nll": summed negative log-likelihood in nats,
# "tokens", "words" (tokens other than <eos>), "bytes": the scored text's counts}. A gate
# allows each a drop relative to the baseline, as perplexity points have no fixed scale.
_LM = "language-modeling"
# name, description, the record's denominator of the NLL, transform, label, gate's drop
_LM_METRICS = (
    ("perplexity", "token perplexity exp(total NLL / scored tokens)", "tokens", _exp, "PPL", 0.02),
    (
        "word_perplexity",
        "word perplexity exp(total NLL / words), as lm-evaluation-harness",
        "words",
        _exp,
        "word PPL",
        0.02,
    ),
    (
        "bits_per_byte",
        "bits per UTF-8 byte, total NLL / (bytes x ln 2), as lm-evaluation-harness",
        "bytes",
        lambda x: x / math.log(2),
        "bits/byte",
        0.005,
    ),
    (
        "byte_perplexity",
        "byte perplexity exp(total NLL / bytes) = 2 ** bits_per_byte, as lm-evaluation-harness",
        "bytes",
        _exp,
        "byte PPL",
        0.005,
    ),
)
for _name, _text, _denominator, _transform, _label, _drop in _LM_METRICS:
    # The ratio (mean NLL per unit) is >= 0; its bootstrap interval is cut there.
    _add_statistic(
        RatioOfSums(_transform, (0.0, math.inf)),
        name=_name,
        description=f"{_text} (lower is better)",
        higher_is_better=False,
        per_sample=operator.itemgetter("nll", _denominator),
        display=MetricDisplay(_label),
        task=_LM,
        gate_tolerance=GateTolerance(max_rel_drop=_drop),
    )


# Semantic segmentation: an image's record is {"counts": its (4, K) intersect / union /
# predicted / labelled pixel counts, flattened}; the metrics are mmsegmentation's ratios of
# the counts summed over the dataset (results/stats/segmentation_metrics.py), with a bootstrap over
# images and a paired bootstrap of the statistic in gates.
for _name, _text, _label in (
    (
        "miou",
        "mean IoU over classes of summed intersections / unions, as mmsegmentation (classes "
        "with an empty union left out)",
        "mIoU",
    ),
    ("pixel_accuracy", "correct / scored pixels over the dataset (mmsegmentation aAcc)", "aAcc"),
    (
        "mean_accuracy",
        "mean over classes of correct / labelled pixels (mmsegmentation mAcc)",
        "mAcc",
    ),
):
    _add_statistic(
        CountsStatistic(_name),
        name=_name,
        description=_text,
        higher_is_better=True,
        per_sample=lambda record: record["counts"],
        display=MetricDisplay(_label, scale=100.0, unit="%", diff_unit="pp"),
        task="semantic-segmentation",
    )


# Text classification under attack: an attacked sample's record adds the attack's `outcome`
# ("skipped": the model was already wrong; "succeeded"; "failed"), its `queries`, and the
# `changed_words` of its `words`. TextAttack's summary numbers, each over the samples it
# defines them on, as ratios of sums with a bootstrap interval and a paired bootstrap in gates.
_TEXT = "text-classification"
_FRACTION, _NONNEGATIVE = (0.0, 1.0), (0.0, math.inf)  # the values a statistic can take


def _attacked(record: Record) -> bool:
    return bool(record["outcome"] != "skipped")


def _add_attack(
    name: str,
    description: str,
    pair: Callable[[Record], tuple[float, float]],
    display: MetricDisplay,
    higher_is_better: bool,
    statistic: RatioOfSums | None = None,
) -> Metric:
    return _add_statistic(
        statistic or RatioOfSums(lambda x: x, _NONNEGATIVE),
        name=name,
        description=description,
        higher_is_better=higher_is_better,
        per_sample=pair,
        display=display,
        task=_TEXT,
        requires="outcome",
    )


_add_attack(
    "attack_success_rate",
    "share of the attacked samples (those the model got right) whose attack succeeded, "
    "as TextAttack's attack success rate (lower is more robust)",
    lambda r: (float(r["outcome"] == "succeeded"), float(_attacked(r))),
    MetricDisplay("success", scale=100.0, unit="%", diff_unit="pp"),
    higher_is_better=False,
    statistic=RatioOfSums(lambda x: x, _FRACTION),
)
_add_attack(
    "queries_mean",
    "model queries per attacked sample (succeeded or failed), as TextAttack's average "
    "number of queries (higher: the attack worked harder)",
    lambda r: (float(r["queries"]) * _attacked(r), float(_attacked(r))),
    MetricDisplay("queries"),
    higher_is_better=True,
)
_add_attack(
    "queries_median",
    "median model queries over the attacked samples (succeeded or failed)",
    lambda r: (float(r["queries"]) * _attacked(r), float(_attacked(r))),
    MetricDisplay("median queries"),
    higher_is_better=True,
    statistic=MedianOfMarked(bounds=_NONNEGATIVE),
)
_add_attack(
    "perturbed_word_share",
    "share of a text's words the attack changed, averaged over successful attacks, as "
    "TextAttack's average perturbed word % (higher: the model needed bigger edits)",
    lambda r: (
        r["changed_words"] / max(r["words"], 1) if r["outcome"] == "succeeded" else 0.0,
        float(r["outcome"] == "succeeded"),
    ),
    MetricDisplay("perturbed words", scale=100.0, unit="%", diff_unit="pp"),
    higher_is_better=True,
    statistic=RatioOfSums(lambda x: x, _FRACTION),
)


# Randomized smoothing (results/stats/certificates.py): records add the smoothed prediction
# (None: abstained), the certified L2 radius; certified accuracy is at each of `radii`; ACR
# (wrong, abstained: 0) is a ratio of sums (radius, 1) for a bootstrap interval.
_add(
    name="smoothed_accuracy",
    description="accuracy of the smoothed classifier (CERTIFY's prediction, or PREDICT at "
    "a smoothed-pgd image; an abstention counts wrong)",
    higher_is_better=True,
    per_sample=lambda record: record[certificates.PREDICTION] == record["y"],
    display=MetricDisplay("smoothed", scale=100.0, unit="%", diff_unit="pp"),
    requires=certificates.PREDICTION,
)
_add(
    name="certified_accuracy",
    description="certified accuracy at L2 radius R, `certified_accuracy@R` for each R of a "
    "randomized-smoothing entry's `radii`: the smoothed classifier is right and its "
    "certified radius > R (fraction of samples)",
    higher_is_better=True,
    per_sample=lambda record: certificates.certified_at(record, 0.0),
    display=MetricDisplay("certified", scale=100.0, unit="%", diff_unit="pp"),
    requires=certificates.RADIUS,
    points="radii",
    per_sample_at=certificates.certified_at,
)
_add_statistic(
    RatioOfSums(lambda x: x, _NONNEGATIVE),
    name="acr",
    description="average certified L2 radius of randomized smoothing over all samples "
    "(wrong or abstained: 0), as Zhai et al. 2020 (MACER) report it",
    higher_is_better=True,
    per_sample=lambda record: (certificates.certified_radius_of(record), 1.0),
    display=MetricDisplay("ACR"),
    requires=certificates.RADIUS,
)
_add(
    name="abstention_rate",
    description="share of samples the smoothed classifier abstains on (pA <= 1/2; lower is better)",
    higher_is_better=False,
    per_sample=lambda record: bool(record[certificates.ABSTAINED]),
    display=MetricDisplay("abstained", scale=100.0, unit="%", diff_unit="pp"),
    requires=certificates.ABSTAINED,
)
