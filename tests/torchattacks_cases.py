"""Small, real configurations of every torchattacks attack, and a model built outside robench,
shared by the parity test and the adapter's contract tests."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

SEED = 1234
CLASSES = 10  # JSMA's untargeted mode aims at (label + 1) mod 10

# Small step counts so that the whole list runs in seconds on a CPU; the code paths are the
# ones a full run takes. Parameters are written as torchattacks names them (robench accepts
# `max_epsilon` and `pixels` as aliases of its `eps`, and "Linf" for its norm).
SMALL: dict[str, dict[str, Any]] = {
    "GN": {"std": 0.05},
    "FGSM": {"eps": 8 / 255},
    "BIM": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3},
    "RFGSM": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3},
    "PGD": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3},
    "EOTPGD": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3, "eot_iter": 2},
    "FFGSM": {"eps": 8 / 255, "alpha": 10 / 255},
    "TPGD": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3},
    "MIFGSM": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3},
    "UPGD": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3, "random_start": True},
    "APGD": {"eps": 8 / 255, "steps": 3},
    "APGDT": {"norm": "L2", "eps": 0.5, "steps": 3},
    "DIFGSM": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3},
    "TIFGSM": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3, "len_kernel": 3},
    "Jitter": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3},
    "NIFGSM": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 3},
    "PGDRS": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 2, "noise_batch_size": 2},
    "SINIFGSM": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 2, "m": 2},
    "VMIFGSM": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 2, "N": 2},
    "VNIFGSM": {"eps": 8 / 255, "alpha": 2 / 255, "steps": 2, "N": 2},
    "SPSA": {"eps": 8 / 255, "nb_iter": 2, "nb_sample": 8, "max_batch_size": 8},
    "JSMA": {"theta": 1.0, "gamma": 0.01},
    "EADL1": {"binary_search_steps": 2, "max_iterations": 10},
    "EADEN": {"binary_search_steps": 2, "max_iterations": 10},
    "PIFGSM": {"max_epsilon": 16 / 255, "num_iter_set": 3},
    "PIFGSMPP": {"max_epsilon": 16 / 255, "num_iter_set": 3},
    "CW": {"c": 1.0, "steps": 5, "lr": 0.05},
    "PGDL2": {"eps": 0.5, "alpha": 0.1, "steps": 3},
    "DeepFool": {"steps": 5},
    "PGDRSL2": {"eps": 0.5, "alpha": 0.1, "steps": 2, "noise_batch_size": 2},
    "SparseFool": {"steps": 2},
    "OnePixel": {"pixels": 2, "steps": 2, "popsize": 4},
    "Pixle": {"restarts": 2, "max_iterations": 2, "x_dimensions": (1, 3), "y_dimensions": (1, 3)},
    "FAB": {"eps": 8 / 255, "steps": 3},
    "AutoAttack": {"eps": 0.3, "version": "standard"},  # APGD-CE fools all: it stops there
    "Square": {"eps": 8 / 255, "n_queries": 20},
}


def tiny_model() -> nn.Module:
    """A small CNN built here, outside robench: (B, 3, 12, 12) -> 10 logits."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1),
        nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Flatten(),
        nn.Linear(6 * 6 * 6, CLASSES),
    ).eval()


def tiny_batch(model: nn.Module, n: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """`n` random images and the labels the model gives them (so every one starts correct)."""
    generator = torch.Generator().manual_seed(7)
    images = torch.rand(n, 3, 12, 12, generator=generator)
    with torch.no_grad():
        labels = model(images).argmax(dim=1)
    return images, labels
