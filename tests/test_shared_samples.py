"""Perturbed samples shared between evaluations in one process (what `robench demo` uses so
that its two models' corruptions are computed once)."""

from __future__ import annotations

import torch

from robench.evaluation.shared_samples import perturbed_sample, sharing_perturbed_samples


class _Counting:
    """A stand-in for `perturb_sample`: item + seed, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, item: torch.Tensor, seed: int) -> torch.Tensor:
        self.calls += 1
        return item + seed


def test_inside_the_context_an_equal_input_key_and_seed_is_computed_once() -> None:
    perturb, item = _Counting(), torch.zeros(1, 4, 4)
    with sharing_perturbed_samples():
        first = perturbed_sample("fog-3", 7, item, lambda: perturb(item, 7))
        again = perturbed_sample("fog-3", 7, item.clone(), lambda: perturb(item, 7))
    assert perturb.calls == 1
    assert torch.equal(first, again)


def test_a_different_input_key_seed_or_shape_is_computed_again() -> None:
    perturb, item = _Counting(), torch.zeros(1, 4, 4)
    with sharing_perturbed_samples():
        perturbed_sample("fog-3", 7, item, lambda: perturb(item, 7))
        perturbed_sample("fog-3", 7, item + 1, lambda: perturb(item + 1, 7))
        perturbed_sample("fog-5", 7, item, lambda: perturb(item, 7))
        perturbed_sample("fog-3", 8, item, lambda: perturb(item, 8))
        flat = item.reshape(1, 16)
        perturbed_sample("fog-3", 7, flat, lambda: perturb(flat, 7))
    assert perturb.calls == 5


def test_outside_the_context_nothing_is_kept() -> None:
    perturb, item = _Counting(), torch.zeros(1, 4, 4)
    with sharing_perturbed_samples():
        perturbed_sample("fog-3", 7, item, lambda: perturb(item, 7))
    perturbed_sample("fog-3", 7, item, lambda: perturb(item, 7))
    perturbed_sample("fog-3", 7, item, lambda: perturb(item, 7))
    assert perturb.calls == 3
