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
from tests.torchattacks_cases import CLASSES, SEED, SMALL, tiny_batch, tiny_model

# Attacks robench does not run, so there is nothing to compare (the catalogue's reasons).
NOT_COMPARED = {name: f"robench refuses it: {reason}" for name, reason in REFUSED.items()}


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
    model = tiny_model()
    images, labels = tiny_batch(model)
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
    return list(getattr(torchattacks, name)(tiny_model()).supported_mode)


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
