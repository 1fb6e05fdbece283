"""The LRA perturbation kinds for the runner: each edits the evaluated dataset
(`tasks/sequence_data.SequenceData`) as a whole, lazily, sample i with the seed
derive_seed(seed, kind and parameters, i), so any batch size or model sees the same edited
sequences. A kind refuses data of another LRA task before any sample is edited.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import torch
from torch.utils.data import Dataset

from robench._core.errors import ConfigError
from robench._core.seeding import derive_seed
from robench.perturbations.base import DatasetPerturbation
from robench.perturbations.sequences import edits
from robench.perturbations.sequences.params import (
    PixelNoiseParams,
    PixelOcclusionParams,
    TokenSubstitutionParams,
)

# (tokens, seed=...) -> edited tokens: a partial of an `edits` function (workers pickle it)
Edit = Callable[..., torch.Tensor]


# The LRA tasks whose sequences are pixels (intensities as ids), not tokens.
PIXEL_TASKS = frozenset({"image", "pathfinder"})


class EditedSequences(Dataset[tuple[torch.Tensor, int]]):
    """`dataset` (all its attributes) with every item's tokens edited as it is read."""

    def __init__(self, dataset: Any, edit: Edit, seed: int, key: str) -> None:
        self.dataset, self.edit, self.seed, self.key = dataset, edit, seed, key

    def __len__(self) -> int:
        return len(self.dataset)

    def __getattr__(self, name: str) -> Any:
        if name == "dataset":  # not set yet (unpickling in a DataLoader worker)
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        tokens, label = self.dataset[index]
        return self.edit(tokens, seed=derive_seed(self.seed, self.key, index)), label


class _SequencePerturbation(DatasetPerturbation):
    kind: ClassVar[str]  # the registered kind's name
    edit: ClassVar[Edit]  # the `edits` function, which takes the parameters by their names
    data_fields: ClassVar[tuple[str, ...]] = ()  # what else it takes of the dataset, by name
    params: TokenSubstitutionParams | PixelNoiseParams | PixelOcclusionParams

    def _edit(self, dataset: Any) -> Edit:
        """The edit of one sequence of `dataset`."""
        data = {name: getattr(dataset, name) for name in self.data_fields}
        return partial(
            self.edit, **self.params.model_dump(), **data, vocab_size=int(dataset.vocab_size)
        )

    def check_dataset(self, dataset: Any) -> None:
        """Refuse another LRA task's data; sequences in memory are token ids unless the model
        names a pixel task (`lra_task`)."""
        task_name = getattr(dataset, "task_name", None)
        allowed = self.params.lra_tasks
        if task_name == "in-memory" and not set(allowed) <= PIXEL_TASKS:
            return
        if task_name == "in-memory":
            raise ConfigError(
                f"{self.kind} edits pixels of {', '.join(allowed)} data, but these sequences "
                "held in memory are token ids as far as robench knows (the model names no LRA "
                "task); pass lra_task='image' or 'pathfinder' if they are pixels, else use "
                "token-substitution."
            )
        if task_name not in allowed:
            raise ConfigError(
                f"{self.kind} edits {', '.join(allowed)} data, but this is {task_name} data; "
                "use token-substitution for token tasks, pixel-noise or pixel-occlusion for "
                "pixel tasks."
            )

    def perturb_dataset(self, dataset: Any, seed: int) -> Any:
        self.check_dataset(dataset)
        key = f"{self.kind}:{self.params.model_dump_json()}"
        return EditedSequences(dataset, self._edit(dataset), seed, key)


class TokenSubstitution(_SequencePerturbation):
    kind = "token-substitution"
    edit = staticmethod(edits.substitute_tokens)
    data_fields = ("pad_id",)
    Params = TokenSubstitutionParams
    params: TokenSubstitutionParams


class PixelNoise(_SequencePerturbation):
    kind = "pixel-noise"
    edit = staticmethod(edits.add_pixel_noise)
    Params = PixelNoiseParams
    params: PixelNoiseParams


class PixelOcclusion(_SequencePerturbation):
    kind = "pixel-occlusion"
    edit = staticmethod(edits.occlude)
    Params = PixelOcclusionParams
    params: PixelOcclusionParams

    def check_dataset(self, dataset: Any) -> None:
        """Also: the images are square and the patch fits in them."""
        super().check_dataset(dataset)
        side = edits.image_side(int(dataset.max_length))
        if self.params.size > side:
            raise ConfigError(
                f"pixel-occlusion size {self.params.size} exceeds the data's {side} x {side} "
                f"images; pass size <= {side}."
            )
