"""A dataset view that perturbs each item as it is loaded (in DataLoader workers if any).

Item i is perturbed with the seed derive_seed(run seed, the perturbation's `seed_key`, i):
a function of the sample alone, never of its batch, its worker or what was drawn before, so
every batch size, worker count and number of processes gives the same perturbed inputs.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import Dataset

from robench._core.errors import AttackCheckError
from robench._core.seeding import derive_seed
from robench.evaluation.shared_samples import perturbed_sample
from robench.perturbations.base import SamplePerturbation


class PerturbedSamples(Dataset[tuple[torch.Tensor, Any]]):
    def __init__(
        self, dataset: Dataset, perturbation: SamplePerturbation, seed: int, name: str
    ) -> None:
        self.dataset = dataset
        self.perturbation = perturbation
        self.seed = seed
        self.name = name  # the result's label, for error messages

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def sample_seed(self, index: int) -> int:
        return derive_seed(self.seed, self.perturbation.seed_key, index)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, Any]:
        item, target = self.dataset[index]
        seed = self.sample_seed(index)
        perturbed = perturbed_sample(
            self.perturbation.seed_key,
            seed,
            item,
            lambda: self.perturbation.perturb_sample(item, seed),
        )
        if perturbed.shape != item.shape or perturbed.dtype != item.dtype:
            raise AttackCheckError(
                f"Perturbation {self.name!r} turned sample {index} of shape {tuple(item.shape)} "
                f"({item.dtype}) into {tuple(perturbed.shape)} ({perturbed.dtype}); it must "
                "keep each input's shape and dtype."
            )
        return perturbed, target
