"""Parity with the peer as oracle (issue 37, item 4): for every attack class torchattacks
exports, robench's `torchattacks.NAME` kind returns the images torchattacks itself returns,
bit for bit, on the same model, inputs, labels, seed and parameters.

The list is `torchattacks.__all__` of the installed library, so an attack a later release
adds is compared without a new test; one robench cannot compare must be named in
`NOT_COMPARED` with the reason, or this test fails for it. The direct call does what the
adapter documents: torch seeded with the seed (`torch.manual_seed`), numpy's global RNG
seeded with seed mod 2**32, the model in eval mode, `seed` and `n_classes` set to the seed
and the model's outputs where the attack takes them and the suite does not.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
import torchattacks
from torch import nn

from robench.perturbations import PERTURBATIONS, build_perturbation
from robench.perturbations.adversarial.torchattacks_catalogue import REFUSED, TARGETED_MODES

SEED = 1234
CLASSES = 10  # JSMA's untargeted mode aims at (label + 1) mod 10

# Attacks robench does not run, so there is nothing to compare (the catalogue's reasons).
NOT_COMPARED = {name: f"robench refuses it: {reason}" for name, reason in REFUSED.items()}

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


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1),
        nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Flatten(),
        nn.Linear(6 * 6 * 6, CLASSES),
    ).eval()


@pytest.fixture(scope="module", autouse=True)
def _one_intra_op_thread() -> Iterator[None]:
    """The model is tiny: one thread is as fast as two, and immune to the slowdown torch's
    spinning worker threads suffer when other processes share the cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model_and_batch() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """A model built here (outside robench), 4 images it classifies as their labels."""
    model = _model()
    generator = torch.Generator().manual_seed(7)
    images = torch.rand(4, 3, 12, 12, generator=generator)
    with torch.no_grad():
        labels = model(images).argmax(dim=1)
    return model, images, labels


def _direct(
    name: str, model: nn.Module, images: torch.Tensor, labels: torch.Tensor, params: dict[str, Any]
) -> tuple[torch.Tensor, list[int]]:
    """torchattacks called directly, seeded as the adapter documents; the targets it chose."""
    library = getattr(torchattacks, name)
    accepted = inspect.signature(library.__init__).parameters
    kwargs = {k: v for k, v in params.items() if k != "targeted"}
    if "seed" in accepted:
        kwargs.setdefault("seed", SEED)
    if "n_classes" in accepted:
        kwargs.setdefault("n_classes", CLASSES)
    torch.manual_seed(SEED)
    np.random.seed(SEED % 2**32)
    attack = library(model, **kwargs)
    chosen: list[torch.Tensor] = []
    if "targeted" in params:
        getattr(attack, TARGETED_MODES[params["targeted"]])(quiet=True)
        choose = attack._target_map_function

        def record(inputs: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
            chosen.append(choose(inputs, labels))
            return chosen[-1]

        attack._target_map_function = record
    adv = attack(images.clone(), labels.clone())
    targets = torch.cat([t.reshape(-1) for t in chosen])[-len(labels) :] if chosen else None
    return adv.detach(), [] if targets is None else targets.tolist()


# Attacks whose `supported_mode` lists "targeted" but that robench does not offer targeted.
TARGETED_NOT_OFFERED = {
    "SPSA": "never asks for target labels: its targeted mode attacks towards the true label",
    "PIFGSMPP": "never asks for target labels: its targeted mode attacks towards the true label",
}


def _offers_targeted(name: str) -> bool:
    return "targeted" in PERTURBATIONS.get(f"torchattacks.{name}").Params.model_fields


def _cases() -> list[Any]:
    cases = []
    for name in torchattacks.__all__:
        if name in NOT_COMPARED:
            continue
        cases.append(pytest.param(name, dict(SMALL.get(name, {})), id=name))
        if _offers_targeted(name):
            targeted = {**SMALL.get(name, {}), "targeted": "random"}
            cases.append(pytest.param(name, targeted, id=f"{name}-targeted-random"))
    return cases


def _supported_modes(name: str) -> list[str]:
    if name in NOT_COMPARED:  # cannot be built from a model alone (MultiAttack, LGV)
        return []
    return list(getattr(torchattacks, name)(_model()).supported_mode)


def test_every_exported_attack_is_compared_or_explained() -> None:
    compared = {case.values[0] for case in _cases()}
    assert compared | set(NOT_COMPARED) == set(torchattacks.__all__)
    assert set(NOT_COMPARED) <= set(torchattacks.__all__), "a stale entry in NOT_COMPARED"


def test_targeted_modes_are_offered_where_the_library_supports_them() -> None:
    supported = {n for n in torchattacks.__all__ if "targeted" in _supported_modes(n)}
    offered = {n for n in torchattacks.__all__ if _offers_targeted(n)}
    assert offered == supported - set(TARGETED_NOT_OFFERED)


@pytest.mark.parametrize(("name", "params"), _cases())
def test_images_equal_torchattacks_called_directly(
    name: str, params: dict[str, Any], model_and_batch: tuple[nn.Module, torch.Tensor, torch.Tensor]
) -> None:
    model, images, labels = model_and_batch
    perturbation = build_perturbation(f"torchattacks.{name}", params)
    ours, columns = perturbation.perturb_with_columns(model, images, labels, SEED)
    theirs, targets = _direct(name, model, images, labels, params)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    different = (ours != theirs).flatten(1).any(dim=1)
    assert not bool(different.any()), (
        f"{name}: {int(different.sum())} of {len(images)} images differ from torchattacks', "
        f"by up to {float((ours - theirs).abs().max()):.3g}"
    )
    if "targeted" in params:
        assert columns["target_class"] == targets
        assert all(t != y for t, y in zip(targets, labels.tolist(), strict=True))
