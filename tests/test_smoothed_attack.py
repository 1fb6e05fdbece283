"""The `smoothed-pgd` kind: SmoothAdv's PGD-L2 on the smoothed classifier, scored by Cohen et
al.'s PREDICT, and the `certificate_vs_attack` check it feeds.

A linear two-class model is the oracle: its smoothed classifier has the same decision
boundary, so the attack flips exactly the samples closer to it than eps (up to PREDICT's
margin), never one farther; its real certificates pass the check, and the same certificates
with radii inflated by hand fail it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import timm
import torch
from scipy.stats import binomtest
from torch import nn

from robench._core.errors import ConfigError
from robench._core.seeding import derive_seed
from robench.evaluation.suites import suite_from_data
from robench.perturbations.base import build_perturbation
from robench.results.stats.certificate_checks import check_certificates
from robench.results.stats.certificates import predict_abstains
from tests.test_certified_results import certified_report

SIGMA = 0.25


@pytest.fixture(scope="module", autouse=True)
def _one_intra_op_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class _Linear(nn.Module):
    """Class 0 where w . (x - 1/2) > 0: sample x's distance to the boundary is
    w . (x - 1/2) / ||w||, for the base and the smoothed classifier alike."""

    def __init__(self, w: torch.Tensor) -> None:
        super().__init__()
        self.w = w.flatten()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = (x.flatten(1) - 0.5) @ self.w  # (B,)
        return torch.stack([d, -d], dim=1)


def _linear_case(samples: int) -> tuple[_Linear, torch.Tensor, torch.Tensor]:
    """Images inside [0, 1] at distances spread over (0.02, 0.5) from the boundary."""
    g = torch.Generator().manual_seed(3)
    w = torch.randn(16, generator=g)
    distance = torch.linspace(0.02, 0.5, samples)
    images = 0.5 + distance[:, None] * (w / w.norm())  # |w_j| / ||w|| < 1: inside [0, 1]
    return _Linear(w), images.view(samples, 1, 4, 4), distance


def _attack(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, seeds: list[int], **params: Any
) -> tuple[torch.Tensor, dict[str, list[Any]]]:
    attack: Any = build_perturbation("smoothed-pgd", {"sigma": SIGMA, **params})
    return attack.perturb_samples(model, images, labels, seeds)


def test_predict_is_cohen_et_al_binomial_test() -> None:
    # core.py: abstain when binom_test(nA, nA + nB, p=0.5) > alpha.
    for top, runner_up in [(60, 40), (70, 30), (520, 480), (1000, 0), (5, 5)]:
        expected = binomtest(top, top + runner_up, 0.5).pvalue > 0.01
        assert predict_abstains(top, runner_up, 0.01) == expected
    assert not predict_abstains(70, 30, 0.01) and predict_abstains(60, 40, 0.01)


def test_linear_model_flips_exactly_within_eps() -> None:
    samples, eps = 24, 0.25
    model, images, distance = _linear_case(samples)
    labels = torch.zeros(samples, dtype=torch.long)
    seeds = [derive_seed(0, "sadv", i) for i in range(samples)]
    params = {"eps": eps, "steps": 8, "noise_samples": 4, "n": 2_000, "batch": 2_000}
    clean_images, clean = _attack(model, images, labels, seeds, **{**params, "eps": 0})
    assert torch.equal(clean_images, images)
    adversarial, attacked = _attack(model, images, labels, seeds, **params)
    moved = (adversarial - images).flatten(1).norm(dim=1)
    assert bool((moved <= eps + 1e-5).all()) and bool(adversarial.min() >= 0)
    # Clean: class 0 wherever PREDICT is confident (all but the samples nearest the boundary).
    assert all(p in (0, None) for p in clean["smoothed_prediction"])
    assert sum(p == 0 for p in clean["smoothed_prediction"]) >= samples - 3
    after = attacked["smoothed_prediction"]
    for d, prediction in zip(distance.tolist(), after, strict=True):
        if d > eps:  # beyond reach: never flipped (the smoothed boundary is f's)
            assert prediction in (0, None), (d, prediction)
        if d < eps - 0.05:  # pushed at least 0.05 past the boundary: PREDICT names class 1
            assert prediction == 1, (d, prediction)
    assert attacked["abstained"] == [p is None for p in after]
    accuracy = [sum(p == 0 for p in c["smoothed_prediction"]) for c in (clean, attacked)]
    assert accuracy[1] < accuracy[0], accuracy


def test_check_passes_real_certificates_and_fails_inflated_ones() -> None:
    samples, eps = 24, 0.25
    model, images, _ = _linear_case(samples)
    labels = torch.zeros(samples, dtype=torch.long)
    certify: Any = build_perturbation(
        "randomized-smoothing", {"sigma": SIGMA, "n0": 100, "n": 2_000, "batch": 2_000}
    )
    cert_seeds = [derive_seed(0, "rs", i) for i in range(samples)]
    _, certificates = certify.perturb_samples(model, images, labels, cert_seeds)
    seeds = [derive_seed(0, "sadv", i) for i in range(samples)]
    params = {"eps": eps, "steps": 8, "noise_samples": 4, "n": 2_000, "batch": 2_000}
    _, attacked = _attack(model, images, labels, seeds, **params)
    cert_params = {"sigma": SIGMA, "n0": 100, "n": 2_000, "alpha": 0.001, "radii": [0.0]}
    attack_params = {"norm": "l2", "sigma": SIGMA, "alpha": 0.001, **params}
    attacks = {"sadv": ("smoothed-pgd", attack_params, {"top1": [True] * samples, **attacked})}
    targets = [0] * samples
    (sound,) = check_certificates(certified_report(targets, certificates, cert_params, attacks))
    assert sound.status == "pass" and sound.values["certified"] > 0, sound.detail
    inflated = {**certificates, "radius": [3 * r for r in certificates["radius"]]}
    (unsound,) = check_certificates(certified_report(targets, inflated, cert_params, attacks))
    assert unsound.status == "warn" and unsound.values["broken"] > unsound.values["allowed"]
    assert "unsound" in unsound.detail


def test_deterministic_per_seed_and_independent_of_the_batch(
    fmnist_test: tuple[torch.Tensor, torch.Tensor],
) -> None:
    torch.manual_seed(0)
    net = timm.create_model("test_vit", num_classes=10, in_chans=1, img_size=28, patch_size=7)
    model = net.eval()
    images, labels = fmnist_test[0][:4], fmnist_test[1][:4]
    seeds = [derive_seed(5, "sadv", i) for i in range(4)]
    params = {"eps": 0.5, "steps": 2, "noise_samples": 2, "n": 40, "batch": 40}
    whole, columns = _attack(model, images, labels, seeds, **params)
    again, same = _attack(model, images, labels, seeds, **params)
    assert torch.equal(whole, again) and columns == same
    parts = [_attack(model, images[i : i + 2], labels[i : i + 2], seeds[i : i + 2], **params)
             for i in (0, 2)]  # fmt: skip
    assert torch.equal(whole, torch.cat([p[0] for p in parts]))
    for name, values in columns.items():
        assert values == [v for part in parts for v in part[1][name]], name
    other, _ = _attack(model, images, labels, [s + 1 for s in seeds], **params)
    assert not torch.equal(whole, other)  # the noise comes from the seeds


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"eps": 0.25}, "sigma"),
        ({"eps": 0.25, "sigma": 0}, "sigma must be > 0"),
        ({"eps": 0.25, "sigma": 0.25, "noise_samples": 0}, "positive integer"),
        ({"eps": 0.25, "sigma": 0.25, "steps": 2.5}, "positive integer"),
        ({"eps": 0.25, "sigma": 0.25, "n": "many"}, "positive integer"),
        ({"eps": 0.25, "sigma": 0.25, "alpha": 1}, "alpha"),
        ({"eps": 0.25, "sigma": 0.25, "step_size": -0.1}, "step_size must be > 0"),
        ({"eps": 0.25, "sigma": 0.25, "norm": "linf"}, "supports 'l2'"),
        ({"eps": -0.25, "sigma": 0.25}, "eps must be >= 0"),
    ],
)
def test_bad_parameters_are_one_sentence(params: dict[str, Any], words: str) -> None:
    entry = {"kind": "smoothed-pgd", "name": "sadv", **params}
    with pytest.raises(ConfigError) as caught:
        suite_from_data([entry], "image-classification")
    message = str(caught.value)
    assert words in message and "\n" not in message, message
