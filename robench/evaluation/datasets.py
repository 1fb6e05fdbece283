"""A request's datasets: opened by the task, checked against the suite, restricted to label
spaces and subsets, sampled, and (with `--bad-images skip`) without unreadable samples.

`build_data` does all of it for `evaluate`; the report's `datasets` section comes from
`data_info`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from torch.utils.data import Dataset

from robench._core.errors import ConfigError, DataError
from robench._core.progress import Progress
from robench.data.subset import indices_sha256, resolve_subset, select_indices
from robench.data.unreadable import Unreadable, find_unreadable
from robench.data.workers import resolve_workers
from robench.evaluation.jobs import data_key
from robench.evaluation.runner import EvalData
from robench.evaluation.suites import LoadedSuite
from robench.models.loading import LoadedModel
from robench.results.report.schema import (
    DEFAULT_DATASET,
    DataInfo,
    LabelSpaceInfo,
    SkippedSample,
)
from robench.tasks.base import Task, TaskData

if TYPE_CHECKING:
    from robench.data.in_memory import InMemory

logger = logging.getLogger(__name__)


class DataRequest(Protocol):
    """What opening and sampling the datasets reads of a request (an `EvalRequest` is one)."""

    split: str
    class_map: Path | None
    data_options: dict[str, Any]
    classes: str | None
    subset: str | None
    limit: int | None
    seed: int
    bad_images: str
    workers: int | str  # a count, or "auto" (data/workers.resolve_workers)

    @property
    def datasets(self) -> dict[str, str | InMemory]: ...


def _data_options(request: DataRequest, loaded_suite: LoadedSuite, task: Task) -> dict[str, Any]:
    """The task's data options: flags over the suite's over the task's defaults."""
    given = {**loaded_suite.suite.data_options, **request.data_options}
    unknown = sorted(set(given) - set(task.data_options))
    if unknown:
        known = ", ".join(task.data_options) or "none"
        raise ConfigError(
            f"data option(s) {', '.join(unknown)} do not apply to {task.name} data (its "
            f"options: {known})."
        )
    return {**task.data_options, **given}


def check_dataset_names(loaded_suite: LoadedSuite, names: list[str]) -> None:
    declared = loaded_suite.suite.datasets
    optional = {name for name, d in declared.items() if d.optional}
    # An unnamed --data is the suite's main dataset, which every entry that names no dataset
    # runs on; only a suite whose entries all name theirs has no use for it.
    has_main = any(planned.dataset is None for planned in loaded_suite.plan)
    main_given = DEFAULT_DATASET in names and has_main
    named = set(names) & set(declared)
    if declared and not named and not main_given and DEFAULT_DATASET not in declared:
        listed = ", ".join(f"{n}=PATH" for n in declared)
        raise ConfigError(
            f"suite {loaded_suite.suite.name!r} runs on named datasets; pass them as --data "
            f"NAME=PATH ({listed})."
        )
    for planned in loaded_suite.plan:
        if planned.dataset not in (None, *names, *optional):
            raise ConfigError(
                f"suite entry {planned.label!r} runs on dataset {planned.dataset!r}, which was "
                f"not given; pass --data {planned.dataset}=PATH (given: {', '.join(names)})."
            )


def _check_limit(limit: int | None, available: int, of: object, whole: str) -> None:
    """A --limit beyond the samples would silently evaluate fewer of them."""
    if limit is not None and limit > available:
        raise ConfigError(
            f"--limit {limit} exceeds the {available} samples of {of}; pass --limit "
            f"{available} or less, or leave --limit out to evaluate {whole}."
        )


def _sample_indices(dataset: TaskData, subset: str | None, limit: int | None, seed: int):
    """The evaluated indices: the subset's (or all), then a seeded `limit` of them."""
    if subset is None:
        return select_indices(len(dataset), limit, seed)
    names = getattr(dataset, "relative_paths", None)
    listed = resolve_subset(subset, len(dataset), names() if names else None)
    _check_limit(limit, len(listed), f"subset {subset}", "the whole subset")
    return [listed[i] for i in select_indices(len(listed), limit, seed)]


def _leave_out_unreadable(
    data: dict[str, EvalData], workers: int | str, progress: Progress | None
) -> tuple[dict[str, EvalData], dict[str, list[Unreadable]]]:
    """`--bad-images skip`: the data without its unreadable samples, and those samples."""
    kept, skipped = {}, {}
    for name, source in data.items():
        found = find_unreadable(
            source.dataset,
            source.indices,
            workers=resolve_workers(workers, [source.dataset]),
            progress=progress,
            name=f"reading {name} images",
        )
        bad = {u.index for u in found}
        for unreadable in found:
            logger.warning("left out: %s", unreadable.reason)
        if len(bad) == len(source.indices):
            raise DataError(
                f"none of the {len(bad)} chosen samples of dataset {name!r} can be read (the "
                f"first: {found[0].reason}); check the path and the files."
            )
        kept[name] = replace(source, indices=[i for i in source.indices if i not in bad])
        skipped[name] = found
    return kept, skipped


def _label_space_info(dataset: TaskData, task: Task) -> LabelSpaceInfo | None:
    space = dataset.label_space
    if space is None:
        return None
    return LabelSpaceInfo(
        name=space.name,
        classes=len(space),
        sha256=space.sha256,
        source=space.source,
        protocol=task.label_space_protocol(len(space)),
    )


def _with_label_spaces(
    datasets: dict[str, TaskData],
    loaded_suite: LoadedSuite,
    default: str,
    classes: str | None,
    task: Task,
) -> dict[str, TaskData]:
    """The datasets with `--classes` applied to the default one, plus one view per
    (dataset, classes) pair that suite entries ask for (keyed `NAME[classes]`); the task
    makes each view (`Task.restrict_to_classes`)."""
    out = dict(datasets)
    if classes is not None:
        out[default] = task.restrict_to_classes(out[default], classes)
    for planned in loaded_suite.plan:
        key = data_key(planned, default)
        base = planned.dataset or default
        if planned.classes is not None and key not in out and base in datasets:
            out[key] = task.restrict_to_classes(datasets[base], planned.classes)
    return out


@dataclass(frozen=True)
class RequestData:
    """A request's datasets, ready to run."""

    # As the task opened them, by name (the resume fingerprint reads these).
    opened: dict[str, TaskData]
    # The opened datasets with --classes applied, plus the label-space views suite entries ask
    # for (keyed `NAME[classes]`).
    views: dict[str, TaskData]
    # Every view and its chosen sample indices (without unreadable samples under "skip").
    data: dict[str, EvalData]
    default: str  # the default dataset's name
    subsets: dict[str, str | None]  # the listed subset of each dataset (the default only)
    skipped: dict[str, list[Unreadable]]  # samples left out as unreadable, by dataset
    options: dict[str, Any]  # the task's data options in effect
    indices_sha256: dict[str, str]  # a hash of each dataset's chosen indices

    def infos(self, task: Task, limit: int | None) -> dict[str, DataInfo]:
        """The report's `datasets` section."""
        return {name: self._info(name, task, limit) for name in self.data}

    def _info(self, name: str, task: Task, limit: int | None) -> DataInfo:
        dataset, corpus = self.views[name], getattr(self.views[name], "info", None)
        return DataInfo(
            corpus=corpus() if callable(corpus) else None,
            label_space=_label_space_info(dataset, task),
            preprocessing_note=dataset.preprocessing_note,
            path=str(dataset.root),
            kind=dataset.kind,
            split=dataset.split,
            n_total=len(dataset),
            n_samples=len(self.data[name].indices),
            limit=limit,
            indices_sha256=self.indices_sha256[name],
            classes=len(dataset.classes),
            class_index_note=dataset.class_index_note,
            subset=self.subsets.get(name),
            skipped=[
                SkippedSample(index=u.index, reason=u.reason) for u in self.skipped.get(name, [])
            ],
        )


def build_data(
    request: DataRequest,
    loaded: LoadedModel,
    task: Task,
    loaded_suite: LoadedSuite,
    progress: Progress | None,
) -> RequestData:
    """Open, restrict and sample the request's datasets (`progress`: shows the reading of
    every image under `--bad-images skip`)."""
    options = _data_options(request, loaded_suite, task)
    opened: dict[str, TaskData] = {}
    declared = loaded_suite.suite.datasets
    for name, path in request.datasets.items():
        layout = declared[name].layout if name in declared else None
        dataset = task.open_data(
            path,
            loaded,
            split=request.split,
            layout=layout,
            class_map=request.class_map,
            options=options,
        )
        if dataset.task != task.name:
            raise DataError(
                f"dataset {name!r} ({path}) is {dataset.task} data but the suite and model are "
                f"{task.name}; pass {task.name} data with --data."
            )
        opened[name] = dataset
    default_name = next(iter(opened))
    datasets = _with_label_spaces(opened, loaded_suite, default_name, request.classes, task)
    # A listed subset restricts the default dataset only.
    subsets = {default_name: request.subset or loaded_suite.suite.subset}
    path, available = request.datasets[default_name], len(datasets[default_name])
    if available == 0:  # whatever the limit (a header-only file)
        raise DataError(
            f"{path} holds no samples (a header-only or empty file, or a folder without "
            "data files); check that it is the data you meant and that it has rows."
        )
    _check_limit(request.limit, available, path, "every sample")
    # A task's data is a torch Dataset too; TaskData names only what the engine reads of it.
    data = {
        name: EvalData(
            cast(Dataset, dataset),
            _sample_indices(dataset, subsets.get(name), request.limit, request.seed),
            dataset.output_classes,
        )
        for name, dataset in datasets.items()
    }
    skipped: dict[str, list[Unreadable]] = {}
    if request.bad_images == "skip":
        data, skipped = _leave_out_unreadable(data, request.workers, progress)
    return RequestData(
        opened=opened,
        views=datasets,
        data=data,
        default=default_name,
        subsets=subsets,
        skipped=skipped,
        options=options,
        indices_sha256={name: indices_sha256(d.indices) for name, d in data.items()},
    )
