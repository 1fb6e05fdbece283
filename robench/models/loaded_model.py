"""`LoadedModel`: a model ready to evaluate and everything robench knows about it (where its
weights and preprocessing came from, its task). Every loader builds one: `loading.load_model`
for names, cards and checkpoints, each model source (`sources/`) for its folders. Its own
module, so that sources and the loader both import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from robench.data.preprocessing import Preprocessing
from robench.models.checkpoints import Checkpoint
from robench.models.provenance import ModelOrigin
from robench.models.spec import ModelSpec

if TYPE_CHECKING:
    from robench.data.text import Vocabulary


@dataclass
class LoadedModel:
    # Eval mode, on the requested device: an image classifier takes [0, 1] images (its
    # normalisation inside), a language model token ids.
    model: nn.Module
    name: str
    architecture: str
    model_kwargs: dict[str, Any]
    spec: ModelSpec  # the resolved values
    sources: dict[str, str]  # field -> where its value came from
    card_path: Path | None = None
    checkpoint: Checkpoint | None = None
    preprocessing: Preprocessing | None = None  # None for a language model
    # The task the model solves: timm models classify images, robench's language models
    # (and plugins registered beside them) model language.
    task: str = "image-classification"
    # False for an image network that names no task (no `robench_task`): evaluate asks it the
    # suite's task when that task takes images (a plugin's segmentation net works unchanged).
    task_declared: bool = True
    vocabulary: Vocabulary | None = None  # a language model's, from its checkpoint
    # What a model source (hf-hub:, local-dir:, hf:, a timm pretrained tag) read instead of
    # a checkpoint: repo or path, commit, weight hashes. None for a checkpoint or no weights.
    origin: ModelOrigin | None = None
    tokenizer: Any = None  # a transformers causal LM's own tokenizer
    max_length: int | None = None  # a transformers causal LM's maximum context

    @property
    def device(self) -> torch.device:
        """Where the model runs (the memory source checks that all of it is there)."""
        return module_device(self.model)

    @property
    def has_weights(self) -> bool:
        """Trained weights were loaded (a checkpoint or a source), not a random init."""
        return self.checkpoint is not None or self.origin is not None

    @property
    def weights_sha256(self) -> str | None:
        """The checkpoint's hash, or one hash over a source's weight files."""
        if self.checkpoint is not None:
            return self.checkpoint.sha256
        return self.origin.sha256 if self.origin is not None else None


def module_device(module: nn.Module) -> torch.device:
    """Where the module's first parameter or buffer lives; cpu for a module with none."""
    for tensor in [*module.parameters(), *module.buffers()]:
        return tensor.device
    return torch.device("cpu")


def text_model(
    network: nn.Module,
    *,
    name: str,
    architecture: str,
    task: str,
    origin: ModelOrigin,
    device: Any,
    tokenizer: Any = None,
    max_length: int | None = None,
    classes: list[str] | None = None,
    vocabulary: Vocabulary | None = None,
) -> LoadedModel:
    """A model that reads tokens or texts as they come, with no checkpoint and no image
    preprocessing, weights described by `origin` (a transformers text model with its
    tokenizer, or a robench model held in memory with its `vocabulary`); eval mode on `device`."""
    return LoadedModel(
        model=network.to(device).eval(),
        name=name,
        architecture=architecture,
        model_kwargs={},
        spec=ModelSpec(architecture=architecture, classes=classes),
        sources={},
        task=task,
        vocabulary=vocabulary,
        origin=origin,
        tokenizer=tokenizer,
        max_length=max_length,
    )
