"""From a suite's plan and the request's datasets to jobs: what each result runs on, by the
rules of docs/formats.md, "Which data an entry runs on" (named datasets, label spaces, optional
datasets, pre-rendered corruption sets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from robench.evaluation.runner import EvalData, Job
from robench.evaluation.suites import DatasetDeclaration, PlannedPerturbation
from robench.results.report.schema import MissingResult

CLEAN_DATASET = "clean"  # where clean entries of a pre-rendered corruption suite run


def data_key(planned: PlannedPerturbation, default: str) -> str:
    """The request dataset key an entry runs on, before the pre-rendered rules."""
    base = planned.dataset or default
    return f"{base}[{planned.classes}]" if planned.classes else base


def missing_result(planned: PlannedPerturbation, key: str, reason: str) -> MissingResult:
    """The report's record of an entry that does not run on dataset `key`, and why."""
    params = planned.report_params()
    return MissingResult(
        name=planned.label, kind=planned.kind, params=params, dataset=key, reason=reason
    )


def resolve_jobs(
    plan: Sequence[PlannedPerturbation],
    data: Mapping[str, EvalData],
    declared: Mapping[str, DatasetDeclaration],
    default: str,
) -> tuple[list[tuple[str, Job]], list[MissingResult]]:
    """(dataset key, job) for every entry that can run here, and the missing ones."""
    jobs: list[tuple[str, Job]] = []
    missing: list[MissingResult] = []

    def skip(planned: PlannedPerturbation, key: str, reason: str) -> None:
        missing.append(missing_result(planned, key, reason))

    for planned in plan:
        key = data_key(planned, default)
        base = planned.dataset or default
        if key not in data:
            what = declared.get(base)
            hint = f" ({what.description})" if what is not None and what.description else ""
            skip(planned, key, f"dataset {base!r} was not given; pass --data {base}=PATH{hint}.")
            continue
        source = data[key]
        root = getattr(source.dataset, "root", key)
        members = getattr(source.dataset, "members", None)
        if members is None:
            jobs.append((key, Job(planned, source)))
            continue
        corruption = getattr(planned.params, "corruption", None)
        if corruption is None:
            if CLEAN_DATASET in data and key != CLEAN_DATASET:
                jobs.append((CLEAN_DATASET, Job(planned, data[CLEAN_DATASET])))
            else:
                clean = f"pass the clean images as --data {CLEAN_DATASET}=PATH"
                reason = (
                    f"{root} holds corrupted images only; {clean} to evaluate {planned.label!r}."
                )
                skip(planned, key, reason)
            continue
        severity = planned.params.severity  # type: ignore[attr-defined]
        member = members.get((corruption, severity))
        if member is None:
            expected = f"expected {corruption}/{severity}/ in it"
            skip(planned, key, f"{root} has no {corruption} at severity {severity} ({expected}).")
            continue
        rendered = EvalData(member, source.indices, source.output_classes)
        jobs.append((key, Job(planned, rendered, prerendered=True)))
    return jobs, missing
