"""The task contract: what the runner, the evaluation and the sanity battery ask of a task
(each method in docs/architecture.md, "Task"). A batch is `(inputs, targets)`; perturbations
receive both (`perturb(model, inputs, targets, seed)`), then the task scores the model on the
perturbed inputs into per-sample records, which the sample store keeps as columns and the
metrics read one record at a time (`Metric.per_sample(record)`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from robench._core.errors import ConfigError
from robench.tasks.finite_values import check_data_finite

if TYPE_CHECKING:
    from robench.data.in_memory import InMemory
    from robench.models.loading import LoadedModel

Record = dict[str, Any]  # one sample's stored outcome
Columns = dict[str, list[Any]]  # a batch's records, column by column


def records_of(columns: Columns) -> list[Record]:
    """A batch's record columns -> one record per sample."""
    names = tuple(columns)
    # map, not a comprehension: a third faster on 10,000 samples (records are built once per
    # run, benchmarks/bench_harness.py); the store checks column lengths when it reads a line.
    return list(map(dict, map(zip, repeat(names), zip(*columns.values(), strict=True))))


class TaskData(Protocol):
    """What the engine and the report read of every dataset a task opens, whatever its
    samples are (robench/data/labeled.py describes each attribute)."""

    @property
    def root(self) -> Path: ...
    @property
    def kind(self) -> str: ...
    @property
    def split(self) -> str | None: ...
    @property
    def task(self) -> str: ...
    @property
    def classes(self) -> Sequence[str]: ...
    @property
    def class_index_note(self) -> str: ...
    @property
    def output_classes(self) -> tuple[int, ...] | None: ...
    @property
    def label_space(self) -> Any: ...
    @property
    def preprocessing_note(self) -> str | None: ...
    def __len__(self) -> int: ...


@dataclass
class ModelCheck:
    """What the checks before a run found: warnings for the report, randomness, masking."""

    randomized: bool = False
    bad_gradient_share: float = 0.0  # samples whose input gradient is zero or not finite
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DataRequest:
    """How `Task.open_data` was asked to read its data: the split, the layout (None: found
    from the files), the class map file and the task's data options as given."""

    split: str
    layout: str | None
    class_map: Path | None
    options: dict[str, Any]


class Task(abc.ABC):
    """One kind of model and data; subclasses fill in every method."""

    name: ClassVar[str]
    # The built-in data `robench eval` uses when no --data is given.
    default_data: ClassVar[str] = "fashion-mnist"
    # Whether the sanity battery (gradient attacks on the inputs) applies to its models.
    sanity_battery: ClassVar[bool] = True
    # Data options suites and flags may set (e.g. {"target_length": 256}); others are refused.
    data_options: ClassVar[dict[str, Any]] = {}
    # The dimensions of its models' logits and their shape in words: a model object held in
    # memory is checked against them on blank inputs (models/sources/memory.py).
    logits: ClassVar[tuple[int, str]] = (2, "(batch, classes)")
    # Whether its logits are per class along dimension 1 (the model's class count is read
    # off them).
    classifies: ClassVar[bool] = True

    # Why the task refuses --class-map (a ConfigError when one is given); None: it reads one.
    class_map_refusal: ClassVar[str | None] = None

    def open_data(
        self,
        path: str | InMemory,
        model: LoadedModel,
        *,
        split: str,
        layout: str | None,
        class_map: Path | None,
        options: dict[str, Any],
    ) -> Any:
        """The dataset at `path` (a built-in name, or items held in memory: `InMemory`) as
        `model` reads it; raises DataError. It has the attributes the engine and the report
        read (`TaskData`). Tasks implement `read_data`, which this calls with the options
        gathered in one `DataRequest`."""
        if class_map is not None and self.class_map_refusal is not None:
            raise ConfigError(self.class_map_refusal)
        return self.read_data(path, model, DataRequest(split, layout, class_map, options))

    def read_data(self, path: str | InMemory, model: LoadedModel, request: DataRequest) -> Any:
        """What `open_data` returns; a task overrides this one (or `open_data` itself, as tasks
        written before `DataRequest` do)."""
        raise NotImplementedError(
            f"{type(self).__name__} implements neither read_data nor open_data"
        )

    def required_modules(self, path: str) -> dict[str, str]:
        """Modules of optional extras that opening `path` imports (module -> what needs it),
        checked before a run loads anything; none by default."""
        return {}

    def batches(
        self,
        dataset: Dataset,
        batches: Sequence[Sequence[int]],
        device: torch.device,
        workers: int = 0,
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """`(inputs, targets)` of each batch of dataset indices, in order, on `device`, made
        by `collate`: the loading of every task. On CUDA the loader pins its batches in
        page-locked memory and the copies to the GPU do not block, so the next batch loads
        while the GPU computes. A dataset with a `stacked_batch(indices)` method (inputs held
        in one tensor) gives its batches itself."""
        cuda = device.type == "cuda"
        stacked = getattr(dataset, "stacked_batch", None)
        if stacked is not None and workers == 0:
            # Inputs already stacked in one tensor (data held in memory): a batch is a slice
            # of it, not a stack of one-item copies, then a second copy into pinned memory.
            for indices in batches:
                inputs, targets = stacked(indices)
                yield inputs.to(device), targets.to(device)
            return
        loader = DataLoader(
            dataset,
            batch_sampler=[list(b) for b in batches],
            num_workers=workers,
            collate_fn=self.collate(dataset),
            pin_memory=cuda,
        )
        for inputs, targets in loader:
            yield (
                inputs.to(device, non_blocking=cuda),
                torch.as_tensor(targets).to(device, non_blocking=cuda),
            )

    def collate(self, dataset: Dataset) -> Callable[[list[Any]], Any] | None:
        """How `batches` joins `dataset`'s samples into one batch; None: torch's default
        stacking (samples of one shape)."""
        return None

    def load_batch(
        self, dataset: Dataset, indices: Sequence[int], device: torch.device
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One batch of `indices` (for checks, diagnostics and one-off batches)."""
        return next(self.batches(dataset, [indices], device))

    @abc.abstractmethod
    def score(self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> Columns:
        """Run `model` on `inputs` (no gradient) and return the per-sample record columns."""

    @abc.abstractmethod
    def target(self, record: Record) -> Any:
        """What the sample was scored against, as the report's `samples.targets` keeps it."""

    @abc.abstractmethod
    def outputs(self, record: Record) -> dict[str, Any]:
        """The model's outputs the report keeps per sample besides metric values."""

    @abc.abstractmethod
    def check_data(
        self, dataset: Dataset, model: nn.Module, inputs: torch.Tensor, *, mapped: bool
    ) -> None:
        """Raise DataError when `dataset` cannot be scored by `model` (e.g. class counts);
        `mapped` says the user mapped the data's targets onto the model's (a class map)."""

    @abc.abstractmethod
    def check_model(
        self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, *, gradients: bool
    ) -> ModelCheck:
        """Inspect the model on one batch: randomness, output form, and (when `gradients`:
        the suite has gradient attacks) gradient masking."""

    @abc.abstractmethod
    def check_perturbed(
        self, original: torch.Tensor, perturbed: torch.Tensor, perturbation: Any, *, name: str
    ) -> None:
        """Raise AttackCheckError when a batch perturbation's output is not a valid input
        within its threat model (images: same shape, the eps-ball, [0, 1], finite)."""

    @abc.abstractmethod
    def check_inputs(self, inputs: torch.Tensor, *, name: str) -> None:
        """Raise AttackCheckError when already-perturbed inputs (pre-rendered or perturbed on
        load) are not valid inputs of this task (for images: finite, in [0, 1])."""

    def check_data_values(self, inputs: torch.Tensor, indices: Sequence[int]) -> None:
        """Raise DataError naming the sample (its dataset index, from `indices`) when a batch
        as read from the data is not valid input: NaN or inf by default (image tasks also
        check [0, 1]). Unlike `check_inputs`, the data is at fault, not a perturbation."""
        check_data_finite(inputs, indices)

    def restrict_to_classes(self, dataset: Any, classes: str) -> TaskData:
        """`dataset` restricted to the label space `classes` (`--classes`, a suite entry's
        `classes`): a view whose targets are positions in that list and whose
        `output_classes` are the model outputs they stand for. A task whose data has no class
        labels to restrict refuses."""
        raise ConfigError(
            f"{self.name} data has no label space to restrict to {classes!r}; drop --classes "
            "(or `classes` from the suite entry)."
        )

    def restrict_outputs(self, model: nn.Module, output_classes: Sequence[int] | None) -> nn.Module:
        """`model` scoring only `output_classes` of its outputs, in that order, for the
        checks, the attacks and the scoring alike; `model` itself when None. Only data from
        `restrict_to_classes` has `output_classes`, so the default refuses them."""
        if output_classes is None:
            return model
        raise ConfigError(f"{self.name} models cannot be scored on a subset of their outputs.")

    def label_space_protocol(self, classes: int) -> str:
        """How a model is scored on a label space of `classes` classes, for the report."""
        return f"the model's outputs are restricted to the {classes} listed classes"

    def adaptation_note(self, dataset: Dataset, model_inputs: Any) -> str | None:
        """A sentence for the report when the data is adapted to the model; None if not."""
        return None
