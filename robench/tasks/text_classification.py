"""Text classification: texts -> class logits, scored by their top-k classes, clean and under
adversarial word and character attacks.

A batch is (texts as UTF-8 byte rows (B, L), -1 padded: data/text/text_rows.py; class indices
(B,)); the model tokenizes inside (models/text_inputs.py). The record is image
classification's (tasks/top_k_records.py); an attack adds its own columns (docs/formats.md,
`samples`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn
from torch.utils.data import Dataset

from robench._core.errors import AttackCheckError, DataError
from robench.data.in_memory import InMemory
from robench.data.text.text_rows import PAD_BYTE, LabeledTextDataset, collate_rows, decode_rows
from robench.tasks.base import DataRequest, ModelCheck, Task
from robench.tasks.top_k_records import TopKRecords, check_classifier, check_labels_fit

if TYPE_CHECKING:
    from robench.models.loading import LoadedModel


class TextClassification(TopKRecords, Task):
    name = "text-classification"
    sanity_battery: ClassVar[bool] = False  # gradient attacks on pixels do not apply
    default_data: ClassVar[str] = "python-docs-sections"
    # The text and label columns of CSV, JSON lines, parquet and arrow data (None: the
    # layout's default, "sentence" for GLUE and "text" otherwise).
    data_options: ClassVar[dict[str, Any]] = {"text_field": None, "label_field": "label"}

    class_map_refusal: ClassVar[str | None] = (
        "--class-map maps image classes; a text classifier's class names come with its "
        "checkpoint and the data's labels are matched to them by name. Leave --class-map out."
    )

    def read_data(self, path: str | InMemory, model: LoadedModel, request: DataRequest) -> Any:
        from robench.data.text.labeled_texts import MissingSplit, read_labeled_texts

        if isinstance(path, InMemory):  # robench.evaluate(data=...): pairs held in memory
            from robench.data.text.in_memory import labeled_texts

            pairs = labeled_texts(path)
            return LabeledTextDataset(pairs, _labels_as_model_classes(pairs, model))
        settings = {**self.data_options, **request.options}
        read = functools.partial(
            read_labeled_texts,
            path,
            layout=request.layout,
            text_field=settings["text_field"],
            label_field=settings["label_field"],
        )
        if request.split != "test":
            texts = read(request.split)
        else:  # robench's default: the layout's labelled split (GLUE: dev.tsv), else test
            try:
                texts = read(None)
            except MissingSplit:
                texts = read("test")
        return LabeledTextDataset(texts, _labels_as_model_classes(texts, model))

    def required_modules(self, path: str) -> dict[str, str]:
        from robench.data.text.labeled_texts import required_modules

        return required_modules(path)

    def collate(self, dataset: Dataset) -> Callable[[list[Any]], Any]:
        return collate_rows

    def check_data(
        self, dataset: Dataset, model: nn.Module, inputs: torch.Tensor, *, mapped: bool
    ) -> None:
        """The labels must be among the model's outputs."""
        advice = "evaluate data with the model's classes, or a model trained on this data."
        check_labels_fit(dataset, model, inputs, advice)

    def check_model(
        self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, *, gradients: bool
    ) -> ModelCheck:
        """Logits (B, K), finite, the same for the same texts twice."""
        return check_classifier(model, inputs, "text", "attack outcomes")

    def check_perturbed(
        self, original: torch.Tensor, perturbed: torch.Tensor, perturbation: Any, *, name: str
    ) -> None:
        """Same texts count, valid byte rows, and (for an attack that can say) every text
        within the attack's constraints."""
        if perturbed.dim() != 2 or perturbed.shape[0] != original.shape[0]:
            raise AttackCheckError(
                f"Perturbation {name!r} turned {original.shape[0]} texts into shape "
                f"{tuple(perturbed.shape)}; it must return one byte row per text."
            )
        self.check_inputs(perturbed, name=name)
        check = getattr(perturbation, "violation", None)
        if check is None:
            return
        for before, after in zip(decode_rows(original), decode_rows(perturbed), strict=True):
            problem = check(before, after)
            if problem:
                raise AttackCheckError(f"Perturbation {name!r} broke its constraints: {problem}.")

    def check_inputs(self, inputs: torch.Tensor, *, name: str) -> None:
        if inputs.dtype != torch.long or (
            inputs.numel() and (int(inputs.min()) < PAD_BYTE or int(inputs.max()) > 255)
        ):
            raise AttackCheckError(
                f"Perturbation {name!r} produced inputs that are not texts as byte rows (int64 "
                "bytes 0..255, -1 padding)."
            )


def _labels_as_model_classes(texts: Any, model: LoadedModel) -> list[int]:
    """The data's labels as the model's class indices: by name when both name their
    classes with the same set, else as they are (checked against the outputs later)."""
    names = model.spec.classes
    data = list(texts.classes)
    if not names or list(names) == data:
        return list(texts.labels)
    index = {name: i for i, name in enumerate(names)}
    unknown = [name for name in data if name not in index]
    if unknown and not all(name.isdigit() for name in data):
        raise DataError(
            f"the data's classes {unknown[:5]} are not among the model's classes "
            f"{list(names)[:8]}; evaluate data labelled with the model's classes."
        )
    if unknown:  # integer labels 0..K-1 of data that names no classes: positions
        return list(texts.labels)
    return [index[data[label]] for label in texts.labels]
