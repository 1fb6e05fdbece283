"""Small synthetic reports for tests of compare, gate and anything else that reads reports.

`make_report` builds a schema-valid `Report` whose per-sample predictions give exactly the
requested top-1 accuracies; `flip` derives a candidate by turning correct samples wrong (or
wrong ones right), recomputing the metrics from the samples as `robench eval` does.
`make_corruption_report` builds ImageNet-C style reports (`gaussian_noise-3` results with
exact per-severity errors, on 1000 classes by default).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from robench.data.subset import indices_sha256
from robench.results.report.schema import (
    DataInfo,
    Environment,
    LabelSpaceInfo,
    MetricValue,
    ModelInfo,
    PerturbationResult,
    Report,
    SampleResults,
    SuiteInfo,
)
from robench.results.stats.metrics import wilson_interval

CLASSES = 10


def _environment() -> Environment:
    return Environment(
        python="3.11.7",
        platform="Linux-6.1-x86_64",
        torch="2.4.0",
        timm="1.0.15",
        torchattacks="3.5.1",
        pyautoattack=None,
        device="cpu",
        num_threads=8,
        git_sha="0" * 40,
    )


def _model(name: str, checkpoint_sha256: str | None) -> ModelInfo:
    return ModelInfo(
        name=name,
        architecture=name,
        model_kwargs={},
        card=None,
        checkpoint=f"checkpoints/{name}.safetensors",
        checkpoint_sha256=checkpoint_sha256,
        checkpoint_layout="safetensors",
        n_parameters=5_717_416,
        normalization={"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]},
        preprocessing={"input_size": [3, 224, 224], "interpolation": "bicubic", "crop_pct": 0.875},
        config_sources={"mean": "model card"},
        randomized=False,
    )


def _accuracy_metrics(correct: Sequence[bool], top5: Sequence[bool]) -> dict[str, MetricValue]:
    n = len(correct)
    metrics = {}
    for name, flags in (("top1", correct), ("top5", top5)):
        k = sum(flags)
        metrics[name] = MetricValue(
            value=k / n if n else 0.0, ci95=wilson_interval(k, n), higher_is_better=True
        )
    return metrics


def make_report(
    model: str = "deit_tiny",
    accuracies: Mapping[str, float] | None = None,
    *,
    n: int = 1000,
    extra_metrics: Mapping[str, Mapping[str, tuple[float, bool]]] | None = None,
    suite: str = "paper-adversarial",
    suite_version: int = 1,
    indices: Sequence[int] | None = None,
    checkpoint_sha256: str | None = None,
    max_samples: Mapping[str, int] | None = None,
    params: Mapping[str, dict[str, Any]] | None = None,
) -> Report:
    """A report with exact top-1 `accuracies` (perturbation -> fraction) on `n` samples.

    The first round(acc * n) samples are correct; top-5 is correct for those and for every
    fourth sample. `extra_metrics` adds perturbations with metrics that have no per-sample
    values (perturbation -> metric -> (value, higher_is_better)), e.g. `mce`.
    """
    accuracies = accuracies if accuracies is not None else {"clean": 0.75, "fgsm": 0.5}
    indices = list(indices) if indices is not None else list(range(n))
    labels = [i % CLASSES for i in indices]
    sha = checkpoint_sha256 or hashlib.sha256(model.encode()).hexdigest()
    results, columns = [], {}
    for name, accuracy in accuracies.items():
        m = (max_samples or {}).get(name, len(indices))
        k = round(accuracy * m)
        correct = [j < k for j in range(m)]
        top5 = [ok or j % 4 == 0 for j, ok in enumerate(correct)]
        columns[name] = {
            "prediction": [
                y if ok else (y + 1) % CLASSES for y, ok in zip(labels, correct, strict=False)
            ],
            "top1": correct,
            "top5": top5,
        }
        results.append(
            PerturbationResult(
                name=name,
                kind="clean" if name == "clean" else name,
                params=dict((params or {}).get(name, {})),
                n_samples=m,
                metrics=_accuracy_metrics(correct, top5),
                wall_time_s=1.0,
            )
        )
    for name, metrics in (extra_metrics or {}).items():
        values = {
            metric: MetricValue(value=v, ci95=(v - 0.5, v + 0.5), higher_is_better=higher)
            for metric, (v, higher) in metrics.items()
        }
        results.append(
            PerturbationResult(
                name=name,
                kind=name,
                params={},
                n_samples=len(indices),
                metrics=values,
                wall_time_s=1.0,
            )
        )
    return Report(
        robench_version="0.1.0",
        created_utc="2025-01-01T00:00:00+00:00",
        command=["robench", "eval", model],
        environment=_environment(),
        model=_model(model, sha),
        suite=SuiteInfo(
            name=suite,
            version=suite_version,
            sha256="5" * 64,
            path=f"attacks/{suite}.toml",
            description="synthetic suite for tests",
        ),
        datasets={
            "default": DataInfo(
                path="/data/imagenet/val",
                kind="image-folder",
                split=None,
                n_total=50_000,
                n_samples=len(indices),
                limit=len(indices),
                indices_sha256=indices_sha256(indices),
                classes=CLASSES,
                class_index_note="sorted folder names",
            )
        },
        seed=0,
        batch_size=64,
        results=results,
        warnings=[],
        samples={"default": SampleResults(indices=indices, targets=labels, values=columns)},
        wall_time_s=10.0,
    )


def flip(
    report: Report,
    perturbation: str,
    to_wrong: int,
    to_right: int = 0,
    *,
    model: str | None = None,
) -> Report:
    """A copy of `report` with `to_wrong` correct top-1 predictions of `perturbation` made
    wrong and `to_right` wrong ones made right (the first ones found); metrics recomputed."""
    new = report.model_copy(deep=True)
    if model is not None:
        new.model.name = model
        new.model.checkpoint_sha256 = hashlib.sha256(model.encode()).hexdigest()
    samples = new.samples["default"]
    labels = samples.targets
    columns = samples.values[perturbation]
    preds = columns["prediction"]
    right = [j for j, p in enumerate(preds) if p == labels[j]]
    wrong = [j for j, p in enumerate(preds) if p != labels[j]]
    if to_wrong > len(right) or to_right > len(wrong):
        raise ValueError(f"cannot flip {to_wrong}/{to_right} samples of {perturbation}")
    for j in right[:to_wrong]:
        preds[j] = (labels[j] + 1) % CLASSES
    for j in wrong[:to_right]:
        preds[j] = labels[j]
        columns["top5"][j] = True
    correct = [p == y for p, y in zip(preds, labels[: len(preds)], strict=True)]
    columns["top1"] = correct
    result = next(r for r in new.results if r.name == perturbation)
    result.metrics = _accuracy_metrics(correct, columns["top5"])
    return new


def write(report: Report, path: Path) -> Path:
    """Write `report` as JSON to `path` (what `robench eval` writes) and return the path."""
    path.write_text(json.dumps(report.model_dump(mode="json")), encoding="utf-8")
    return path


def corruption_name(corruption: str, severity: int) -> str:
    """`gaussian_noise-3`: how suites name a corruption result."""
    return f"{corruption}-{severity}"


def make_corruption_report(
    model: str = "resnet50",
    errors: Mapping[tuple[str, int], float] | None = None,
    *,
    n: int = 200,
    clean_error: float | None = None,
    classes: int = 1000,
    label_space: LabelSpaceInfo | None = None,
    dataset: str = "default",
    wrong: Mapping[tuple[str, int], Sequence[int]] | None = None,
    max_samples: Mapping[tuple[str, int], int] | None = None,
    source: str = "on-the-fly",
    suite: str = "imagenet-c",
) -> Report:
    """A report of corruption results (ImageNet-C style) on `n` samples of `dataset`.

    `errors` maps (corruption, severity) to an exact top-1 error: the first round(error * n)
    samples are wrong; `wrong` instead lists the wrong sample positions of a result.
    `clean_error` adds a `clean` result. Results are named `gaussian_noise-3` and carry the
    params `robench eval` writes (corruption, severity, threat model, source).
    """
    indices = list(range(n))
    labels = [i % classes for i in indices]
    planned: dict[tuple[str, int], set[int]] = {}
    for key, error in (errors or {}).items():
        planned[key] = set(range(round(error * n)))
    for key, positions in (wrong or {}).items():
        planned[key] = set(positions)
    entries: list[tuple[str, str, dict[str, Any], set[int], int]] = []
    if clean_error is not None:
        entries.append(("clean", "clean", {}, set(range(round(clean_error * n))), n))
    for (corruption, severity), positions in planned.items():
        params = {
            "corruption": corruption,
            "severity": severity,
            "threat_model": "unbounded",
            "source": source,
        }
        m = (max_samples or {}).get((corruption, severity), n)
        entries.append((corruption_name(corruption, severity), "corruption", params, positions, m))
    results, columns = [], {}
    for name, kind, params, positions, m in entries:
        correct = [j not in positions for j in range(m)]
        top5 = [ok or j % 4 == 0 for j, ok in enumerate(correct)]
        columns[name] = {
            "prediction": [
                y if ok else (y + 1) % classes for y, ok in zip(labels, correct, strict=False)
            ],
            "top1": correct,
            "top5": top5,
        }
        results.append(
            PerturbationResult(
                name=name,
                kind=kind,
                params=params,
                dataset=dataset,
                n_samples=m,
                metrics=_accuracy_metrics(correct, top5),
                wall_time_s=1.0,
            )
        )
    report = make_report(model, {}, n=n, suite=suite)
    report.results = results
    report.datasets = {
        dataset: report.data.model_copy(
            update={"classes": classes, "label_space": label_space, "path": "/data/imagenet-c"}
        )
    }
    report.samples = {dataset: SampleResults(indices=indices, targets=labels, values=columns)}
    return report
