"""Sequence classification: token or pixel sequences of up to several thousand positions ->
class logits, as in the Long Range Arena (Tay et al. 2021). Batches, the record (that of image
and text classification) and where the LRA task comes from: docs/sequence-classification.md.
A sequence longer than the model reads, other padding, another vocabulary or single
documents for a retrieval model are refused before anything runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn
from torch.utils.data import Dataset

from robench._core.errors import ConfigError, DataError
from robench.tasks.base import DataRequest, ModelCheck, Task
from robench.tasks.sequence_data import SequenceData, collate_sequences
from robench.tasks.token_inputs import TokenInputs
from robench.tasks.top_k_records import TopKRecords, check_classifier, check_labels_fit

if TYPE_CHECKING:
    from robench.data.in_memory import InMemory
    from robench.models.loading import LoadedModel

LRA_TASKS = ("listops", "text", "retrieval", "image", "pathfinder")
_LAYOUT_PREFIX = "lra-"


class SequenceClassification(TopKRecords, TokenInputs, Task):
    name = "sequence-classification"
    sanity_battery: ClassVar[bool] = False  # gradient attacks on pixels do not apply
    default_data: ClassVar[str] = ""  # no built-in data: `open_data` asks for --data
    # The LRA task of the data (None: the layout's, else the model's).
    data_options: ClassVar[dict[str, Any]] = {"lra_task": None}
    token_row: ClassVar[str] = "sequence"

    class_map_refusal: ClassVar[str | None] = (
        "--class-map maps image classes; LRA labels are fixed by each task. Leave --class-map out."
    )

    def read_data(self, path: str | InMemory, model: LoadedModel, request: DataRequest) -> Any:
        from robench.data.in_memory import InMemory

        network, options, split = model.model, request.options, request.split
        if isinstance(path, InMemory):  # robench.evaluate(data=...): sequences in memory
            from robench.tasks.sequence_memory import InMemorySequences

            memory = InMemorySequences(path, network, options.get("lra_task"))
            data = SequenceData(memory, Path(path.name), None)
        else:
            data = open_lra_data(path, split, options.get("lra_task"), request.layout, network)
        check_fits(data, network, model.name)
        return data

    def collate(self, dataset: Dataset) -> Callable[[list[Any]], Any]:
        return functools.partial(collate_sequences, pad_id=getattr(dataset, "pad_id", None))

    def check_data(
        self, dataset: Dataset, model: nn.Module, inputs: torch.Tensor, *, mapped: bool
    ) -> None:
        """The labels must be among the model's outputs."""
        check_labels_fit(
            dataset, model, inputs, "evaluate data of the LRA task the model was trained on."
        )

    def check_model(
        self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, *, gradients: bool
    ) -> ModelCheck:
        """Logits (B, K), finite, the same for the same sequences twice."""
        from robench.models.checks import train_mode_warnings

        found = check_classifier(model, inputs, "sequence", "results")
        found.warnings[:0] = train_mode_warnings(model)  # reported before the others
        return found


def lra_task_name(given: str | None, layout: str | None, network: nn.Module | None) -> str:
    """The data's LRA task: `given` (the `lra_task` option), else the layout's, else the
    one `network` was trained on."""
    if given is None and layout is not None and layout.startswith(_LAYOUT_PREFIX):
        given = layout.removeprefix(_LAYOUT_PREFIX)
    given = given or getattr(network, "lra_task", None)
    if given is None:
        raise ConfigError(
            "robench cannot tell which LRA task the data is; pass --lra-task (one of "
            f"{', '.join(LRA_TASKS)}) or a model trained by `robench train`, which records it."
        )
    if given not in LRA_TASKS:
        raise ConfigError(
            f"--lra-task {given!r} is not an LRA task; choose one of {', '.join(LRA_TASKS)}."
        )
    return str(given)


def open_lra_data(
    path: str, split: str, given: str | None, layout: str | None, network: nn.Module | None
) -> SequenceData:
    """The LRA reader's dataset (robench/data/lra) of the task `lra_task_name` finds."""
    from robench.data.lra import open_lra

    if not path:
        raise DataError(
            "sequence classification has no built-in data; pass --data with an LRA dataset "
            "(a ListOps TSV folder, a Pathfinder folder, ...) and --lra-task."
        )
    task_name = lra_task_name(given, layout, network)
    return SequenceData(open_lra(path, task_name, split), Path(path), split)


def check_fits(data: SequenceData, network: nn.Module, name: str) -> None:
    """Refuse data the model cannot read: longer sequences, another task's pairing, padding
    or vocabulary (a model that does not say what it reads is not checked)."""
    limit = getattr(network, "max_length", None)
    longest = data.longest() if limit is not None and data.max_length > limit else 0
    if limit is not None and longest > limit:
        raise DataError(
            f"{data.root} holds sequences of up to {longest} tokens but {name} reads at most "
            f"{limit}; evaluate a model trained with max_length >= {longest}, or shorter "
            "sequences."
        )
    pair = getattr(network, "pair", None)
    if pair is not None and bool(pair) != data.pair:
        has, wants = ("pairs of documents", "one") if data.pair else ("one document", "pairs")
        raise DataError(
            f"{data.root} is {data.task_name} data of {has} per sample but {name} reads "
            f"{wants}; evaluate a model trained on {data.task_name}."
        )
    pad_id = getattr(network, "pad_id", data.pad_id)
    if pad_id != data.pad_id:
        raise DataError(
            f"{data.root} pads with token {data.pad_id} but {name} was trained with padding "
            f"{pad_id}; evaluate data of the LRA task and encoding the model was trained on."
        )
    vocab = getattr(network, "vocab_size", None)
    if vocab is not None and data.vocab_size > vocab:
        raise DataError(
            f"{data.root} has a vocabulary of {data.vocab_size} tokens but {name} reads "
            f"{vocab}; evaluate data of the LRA task the model was trained on."
        )
