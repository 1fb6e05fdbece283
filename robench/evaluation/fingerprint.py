"""What a run reads and what decides its records: the resume fingerprint.

A sample store is resumed only when its fingerprint matches the run's (robench.evaluation
.store.sample_store), so everything that changes a sample's record belongs here: the checkpoint,
the suite, the chosen indices, the preprocessing and the data's files.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch

from robench._core.version import __version__
from robench.evaluation.datasets import RequestData
from robench.evaluation.environment import describe_device
from robench.evaluation.report_assembly import preprocessing_info
from robench.evaluation.speed import SpeedOptions
from robench.evaluation.suites import LoadedSuite
from robench.evaluation.transfer import SurrogateChoice, surrogate_paths
from robench.models.loading import LoadedModel
from robench.tasks.base import TaskData

if TYPE_CHECKING:
    from robench.data.in_memory import InMemory


class FingerprintRequest(SurrogateChoice, Protocol):
    """What the run's inputs and fingerprint read of a request (an `EvalRequest` is one)."""

    checkpoint: Path | None
    model: str | None
    class_map: Path | None
    subset: str | None
    classes: str | None
    imports: tuple[str, ...]
    split: str
    limit: int | None
    seed: int
    batch_size: int

    @property
    def datasets(self) -> dict[str, str | InMemory]: ...


def input_paths(request: FingerprintRequest, loaded_suite: LoadedSuite) -> dict[str, Path]:
    """Files and folders the run reads, by the flag that names them."""
    given: list[tuple[str, object]] = [
        ("--checkpoint", request.checkpoint),
        ("--suite", loaded_suite.path),
        *((f"the suite's include {path}", path) for path in loaded_suite.includes),
        ("the model card", request.model),
        ("--class-map", request.class_map),
        ("--subset", request.subset),
        ("--classes", request.classes),
        *(("--import", target) for target in request.imports),
        *((f"--data {name}", path) for name, path in request.datasets.items()),
        *surrogate_paths(request, loaded_suite),
    ]
    return {
        flag: Path(value)
        for flag, value in given
        if isinstance(value, (str, Path)) and value and Path(value).exists()
    }


def _file_list_sha256(root: Path, dataset: TaskData) -> str:
    """A cheap fingerprint of a dataset's content: its file names (and sizes where there is
    no file list), so another folder or a changed one is not taken for the same data."""
    content = getattr(dataset, "content_sha256", None)
    if content is not None:  # data held in memory whose content is cheap to hash
        return str(content)
    names = getattr(dataset, "relative_paths", None)
    listed = names() if callable(names) else None  # None too for array data (CIFAR-10-C)
    if listed is not None:
        listing = sorted(str(name) for name in listed)
    elif root.is_dir():
        listing = sorted(
            f"{entry.name}:{entry.stat().st_size}" for entry in root.iterdir() if entry.is_file()
        )
    elif root.is_file():
        listing = [f"{root.name}:{root.stat().st_size}"]
    else:
        listing = []
    return hashlib.sha256("\n".join(listing).encode()).hexdigest()


def _data_fingerprint(dataset: TaskData) -> dict[str, Any]:
    root = Path(dataset.root)
    return {
        "path": str(root.resolve()),
        "kind": dataset.kind,
        "split": dataset.split,
        "n_total": len(dataset),
        "files_sha256": _file_list_sha256(root, dataset),
    }


def run_fingerprint(
    request: FingerprintRequest,
    loaded: LoadedModel,
    loaded_suite: LoadedSuite,
    data: RequestData,
    device: torch.device,
    speed: SpeedOptions,
) -> dict[str, Any]:
    """The run's fingerprint: a store written under another one is not resumed."""
    prep = loaded.preprocessing
    fingerprint = {
        "checkpoint_sha256": loaded.weights_sha256,
        "architecture": loaded.architecture,
        "suite_sha256": loaded_suite.sha256,
        "indices_sha256": data.indices_sha256,
        "seed": request.seed,
        "batch_size": request.batch_size,
        # The GPU model too: CUDA's random draws, and kernels' rounding, differ between them.
        "device": describe_device(device),
        "robench_version": __version__,
        # What else decides a sample's record, so that changing --std or pointing --data at
        # another folder of the same size starts a new run instead of merging two.
        "normalization": {"mean": list(loaded.spec.mean or ()), "std": list(loaded.spec.std or ())},
        "preprocessing": preprocessing_info(prep) if prep is not None else None,
        "model_kwargs": loaded.model_kwargs,
        "data": {name: _data_fingerprint(dataset) for name, dataset in data.opened.items()},
        "split": request.split,
        "limit": request.limit,
        "subset": request.subset,
    }
    if request.classes is not None:  # only when given, so older stores still resume
        fingerprint["classes"] = request.classes
    if data.options:  # windows of a text corpus change what a sample is
        fingerprint["data_options"] = data.options
    if speed.amp is not None:  # changes numbers; channels-last and compile do not
        fingerprint["amp"] = speed.amp
    if speed.tf32 and device.type == "cuda":  # so does TF32 (only when CUDA honours it)
        fingerprint["tf32"] = True
    return fingerprint
