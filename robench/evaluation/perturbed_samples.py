"""A dataset view that perturbs each item as it is loaded (in DataLoader workers if any).

Item i is perturbed with the seed derive_seed(run seed, the perturbation's `seed_key`, i):
a function of the sample alone, never of its batch, its worker or what was drawn before, so
every batch size, worker count and number of processes gives the same perturbed inputs.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch.utils.data import Dataset

from robench._core.errors import AttackCheckError, DataError
from robench._core.seeding import derive_seed
from robench.evaluation.shared_samples import perturbed_sample
from robench.perturbations.base import SamplePerturbation
from robench.tasks.pixel_inputs import check_pixel_range


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

    def _check_input(self, item: torch.Tensor, index: int) -> None:
        """A corruption maps any input into [0, 1]: a 0..255 or NaN image would come out as
        ordinary pixels and be scored as if valid, so what goes in is checked (the target
        is never perturbed)."""
        if item.is_floating_point() and not bool(torch.isfinite(item).all()):
            raise DataError(
                f"sample {index} of the data holds NaN or inf values, which {self.name!r} would "
                "turn into ordinary pixels; fix or drop the sample (--allow-nonfinite cannot "
                "keep them through a corruption)."
            )
        check_pixel_range(item.unsqueeze(0), [index])

    def __getitem__(self, index: int) -> tuple[torch.Tensor, Any]:
        item, target = self.dataset[index]
        if isinstance(item, torch.Tensor):
            self._check_input(item, index)
        perturbation = self.perturbation
        seed = derive_seed(self.seed, perturbation.seed_key, index)
        compute = functools.partial(perturbation.perturb_sample, item, seed)
        perturbed = perturbed_sample(perturbation.seed_key, seed, item, compute)
        if perturbed.shape != item.shape or perturbed.dtype != item.dtype:
            raise AttackCheckError(
                f"Perturbation {self.name!r} turned sample {index} of shape {tuple(item.shape)} "
                f"({item.dtype}) into {tuple(perturbed.shape)} ({perturbed.dtype}); it must "
                "keep each input's shape and dtype."
            )
        return perturbed, target
