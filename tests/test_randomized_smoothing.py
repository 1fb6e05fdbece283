"""The `randomized-smoothing` kind against its oracles, and its bad input.

- On a timm model, robench's counts, pA bounds and radii equal a line-by-line transcription
  of Cohen et al.'s `core.py` (github.com/locuslab/smoothing, code/core.py: `Smooth.certify`,
  `_sample_noise`, `_lower_confidence_bound` with statsmodels' `proportion_confint(method=
  "beta")`), and IBM ART's `PyTorchRandomizedSmoothing.certify`, on the same noise.
- On a linear two-class model the smoothed classifier's true radius is the distance to the
  decision boundary: robench's certified radius never exceeds it (beyond alpha) and approaches
  it as n grows.
- Certificates do not depend on the run's batch size; bad parameters are one sentence.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import ceil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import timm
import torch
from scipy.stats import binom
from scipy.stats import norm as normal
from statsmodels.stats.proportion import proportion_confint
from torch import nn
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench._core.seeding import derive_seed
from robench.cli import app
from robench.evaluation.suites import suite_from_data
from robench.perturbations.base import build_perturbation
from robench.results.stats.certificates import clopper_pearson_lower

SIGMA = 0.25


@pytest.fixture(scope="module", autouse=True)
def _one_intra_op_thread() -> Iterator[None]:
    """Small models: one thread is as fast as two, and immune to torch's spinning worker
    threads when other processes share the cores (as in test_perturbations.py)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class _Normalised(nn.Module):
    """A timm network behind robench's convention: pixels in [0, 1], normalised inside."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - 0.2860) / 0.3530)


@pytest.fixture(scope="module")
def timm_model() -> nn.Module:
    torch.manual_seed(0)
    net = timm.create_model("test_vit", num_classes=10, in_chans=1, img_size=28, patch_size=7)
    return _Normalised(net).eval()


class CohenSmooth:
    """Cohen et al.'s `Smooth` (code/core.py), transcribed: only `device='cuda'` is dropped
    from `torch.randn_like`, so the noise comes from torch's (CPU) default generator."""

    ABSTAIN = -1

    def __init__(self, base_classifier: nn.Module, num_classes: int, sigma: float) -> None:
        self.base_classifier = base_classifier
        self.num_classes = num_classes
        self.sigma = sigma

    def certify(
        self, x: torch.Tensor, n0: int, n: int, alpha: float, batch_size: int
    ) -> tuple[int, float, int, int, float]:
        """As core.py, also returning the counts and pABar the comparison needs."""
        self.base_classifier.eval()
        counts_selection = self._sample_noise(x, n0, batch_size)
        cAHat = counts_selection.argmax().item()
        counts_estimation = self._sample_noise(x, n, batch_size)
        nA = counts_estimation[cAHat].item()
        pABar = self._lower_confidence_bound(nA, n, alpha)
        if pABar < 0.5:
            return Smooth_ABSTAIN, 0.0, counts_selection[cAHat], nA, pABar
        radius = self.sigma * normal.ppf(pABar)
        return cAHat, radius, counts_selection[cAHat], nA, pABar

    def _sample_noise(self, x: torch.Tensor, num: int, batch_size: int) -> np.ndarray:
        with torch.no_grad():
            counts = np.zeros(self.num_classes, dtype=int)
            for _ in range(ceil(num / batch_size)):
                this_batch_size = min(batch_size, num)
                num -= this_batch_size
                batch = x.repeat((this_batch_size, 1, 1, 1))
                noise = torch.randn_like(batch) * self.sigma
                predictions = self.base_classifier(batch + noise).argmax(1)
                counts += self._count_arr(predictions.cpu().numpy(), self.num_classes)
            return counts

    def _count_arr(self, arr: np.ndarray, length: int) -> np.ndarray:
        counts = np.zeros(length, dtype=int)
        for idx in arr:
            counts[idx] += 1
        return counts

    def _lower_confidence_bound(self, NA: int, N: int, alpha: float) -> float:
        return float(proportion_confint(NA, N, alpha=2 * alpha, method="beta")[0])


Smooth_ABSTAIN = CohenSmooth.ABSTAIN


def _robench(
    model: nn.Module, images: torch.Tensor, seeds: list[int], **params: Any
) -> dict[str, list[Any]]:
    smoothing: Any = build_perturbation("randomized-smoothing", {"sigma": SIGMA, **params})
    labels = torch.zeros(len(images), dtype=torch.long)
    out, columns = smoothing.perturb_samples(model, images, labels, seeds)
    assert torch.equal(out, images)  # the scored input is the clean image
    return columns


def test_certificates_equal_cohen_et_al_core_py(
    timm_model: nn.Module, fmnist_test: tuple[torch.Tensor, torch.Tensor]
) -> None:
    images = fmnist_test[0][:12]
    seeds = [derive_seed(7, "rs", i) for i in range(len(images))]
    params = {"n0": 30, "n": 250, "alpha": 0.05, "batch": 64}  # 64: chunks of 64, 64, ... 58
    ours = _robench(timm_model, images, seeds, **params)
    smooth = CohenSmooth(timm_model, 10, SIGMA)
    abstained = 0
    for i, (image, seed) in enumerate(zip(images, seeds, strict=True)):
        torch.manual_seed(seed)  # the same stream robench draws the sample's noise from
        c_hat, radius, count0, n_a, p_a = smooth.certify(image, 30, 250, 0.05, 64)
        assert ours["count_selection"][i] == count0
        assert ours["count_estimation"][i] == n_a
        assert ours["p_lower"][i] == pytest.approx(p_a, rel=1e-12, abs=1e-15)
        assert ours["radius"][i] == pytest.approx(radius, rel=1e-12, abs=1e-15)
        expected = None if c_hat == Smooth_ABSTAIN else c_hat
        assert ours["smoothed_prediction"][i] == expected
        assert ours["abstained"][i] == (c_hat == Smooth_ABSTAIN)
        abstained += c_hat == Smooth_ABSTAIN
    # Both paths were exercised: some samples certified, some abstained.
    assert 0 < abstained < len(images), ours


def test_certificates_equal_art_on_the_same_noise(
    timm_model: nn.Module, fmnist_test: tuple[torch.Tensor, torch.Tensor]
) -> None:
    """ART draws its noise with numpy's global RNG (`_noisy_samples`); replaced here by the
    torch stream robench draws from, ART's selection, counting, bound and radius run as
    shipped. One draw per phase (robench's `batch` >= n), as ART draws each phase at once."""
    pytest.importorskip("art")
    from art.estimators.certification.randomized_smoothing import PyTorchRandomizedSmoothing

    images = fmnist_test[0][12:20]
    seeds = [derive_seed(3, "art", i) for i in range(len(images))]
    n0, n, alpha = 20, 300, 0.01
    ours = _robench(timm_model, images, seeds, n0=n0, n=n, alpha=alpha, batch=n)
    art = PyTorchRandomizedSmoothing(
        model=timm_model,
        loss=nn.CrossEntropyLoss(),
        input_shape=(1, 28, 28),
        nb_classes=10,
        device_type="cpu",
        sample_size=n0,
        scale=SIGMA,
        alpha=alpha,
    )
    generator = torch.Generator()

    def same_noise(x: np.ndarray, n: int | None = None) -> np.ndarray:
        copies = np.repeat(np.expand_dims(x, axis=0), n, axis=0)
        noise = torch.randn(copies.shape, generator=generator) * SIGMA
        return (torch.from_numpy(copies) + noise).numpy()

    art._noisy_samples = same_noise  # type: ignore[method-assign]
    for i, (image, seed) in enumerate(zip(images, seeds, strict=True)):
        generator.manual_seed(seed)
        prediction, radius = art.certify(image[None].numpy(), n=n, batch_size=n)
        expected = None if prediction[0] == -1 else int(prediction[0])
        assert ours["smoothed_prediction"][i] == expected
        assert ours["radius"][i] == pytest.approx(float(radius[0]), rel=1e-9, abs=1e-12)
    assert 0 < sum(ours["abstained"]) < len(images), ours  # both paths compared


def test_clopper_pearson_equals_statsmodels() -> None:
    for k, n, alpha in [(0, 10, 0.05), (1, 10, 0.05), (99, 100, 0.001), (100, 100, 0.001)]:
        expected = proportion_confint(k, n, alpha=2 * alpha, method="beta")[0]
        assert clopper_pearson_lower(k, n, alpha) == pytest.approx(float(expected), abs=1e-15)


class _TwoClassLinear(nn.Module):
    """Class 0 where w . x + b > 0: the distance to the boundary is (w . x + b) / ||w||."""

    def __init__(self, w: torch.Tensor, b: float) -> None:
        super().__init__()
        self.w, self.b = w, b

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x.flatten(1) @ self.w.flatten() + self.b  # (B,)
        return torch.stack([d, -d], dim=1)


def _linear_case(samples: int) -> tuple[_TwoClassLinear, torch.Tensor, torch.Tensor]:
    """Samples of class 0 whose distances to the boundary w . x = 0 spread over
    (0.05, 2) sigma: random images moved along w to the wanted distance."""
    g = torch.Generator().manual_seed(1)
    w = torch.randn(1, 4, 4, generator=g)
    images = torch.rand(samples, 1, 4, 4, generator=g).flatten(1)
    wanted = SIGMA * torch.linspace(0.05, 2.0, samples)
    unit = w.flatten() / w.flatten().norm()
    shifted = images + (wanted - images @ unit)[:, None] * unit
    return _TwoClassLinear(w, 0.0), shifted.view(samples, 1, 4, 4), wanted


def test_linear_model_radius_is_sound_and_tight() -> None:
    """The smoothed linear classifier's radius is exactly its boundary distance; robench's
    certified radius stays below it (a failure has probability alpha per sample) and its gap
    shrinks as n grows."""
    samples, alpha = 48, 0.001
    model, images, distance = _linear_case(samples)
    seeds = [derive_seed(0, "linear", i) for i in range(samples)]
    gaps = []
    for n in (100, 1_000, 100_000):
        cols = _robench(model, images, seeds, n0=100, n=n, alpha=alpha, batch=50_000)
        radius = torch.tensor(cols["radius"])
        assert all(p in (0, None) for p in cols["smoothed_prediction"])
        exceed = int((radius > distance + 1e-9).sum())
        # With the seeds fixed the test is deterministic; the bound is the count a sound
        # certificate exceeds with probability 1e-6 (binomial, alpha per sample).
        assert exceed <= binom.ppf(1 - 1e-6, samples, alpha), (n, radius, distance)
        certified = ~torch.tensor(cols["abstained"])
        gaps.append(float((distance - radius)[certified].mean()) / SIGMA)
    assert gaps[0] > gaps[1] > gaps[2] >= 0, gaps
    assert gaps[2] < 0.05, gaps  # within 5% of sigma on average at n = 100,000


def test_certificates_do_not_depend_on_the_batch(
    timm_model: nn.Module, fmnist_test: tuple[torch.Tensor, torch.Tensor]
) -> None:
    images = fmnist_test[0][:6]
    seeds = [derive_seed(5, "rs", i) for i in range(6)]
    whole = _robench(timm_model, images, seeds, n0=10, n=60, batch=60)
    parts = [_robench(timm_model, images[i : i + 2], seeds[i : i + 2], n0=10, n=60, batch=60)
             for i in (0, 2, 4)]  # fmt: skip
    for name, values in whole.items():
        assert values == [v for part in parts for v in part[name]], name


def test_eval_records_the_same_certificates_at_any_batch_size(tmp_path: Path) -> None:
    suite = tmp_path / "rs.toml"
    suite.write_text(
        'name = "rs"\nversion = 1\n'
        'metrics = ["top1", "certified_accuracy", "acr", "abstention_rate"]\n'
        '[[perturbations]]\nkind = "randomized-smoothing"\nname = "rs"\nsigma = 0.25\n'
        "n0 = 10\nn = 50\nbatch = 30\nradii = [0, 0.1]\n"
    )
    reports = []
    for batch in ("3", "8"):
        out = tmp_path / f"r{batch}.json"
        args = ["eval", "vit_nano_fmnist", "-s", str(suite), "--limit", "8", "-b", batch]
        result = CliRunner().invoke(app, [*args, "-o", str(out)])
        assert result.exit_code == 0, result.output
        reports.append(out)
    from robench.results.report.schema import read_report

    a, b = (read_report(p) for p in reports)
    assert a.samples["default"].values["rs"] == b.samples["default"].values["rs"]
    metrics = set(a.results[0].metrics)
    assert {"certified_accuracy@0", "certified_accuracy@0.1", "acr", "abstention_rate"} <= metrics


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"sigma": 0}, "sigma must be > 0"),
        ({"sigma": -0.5}, "sigma must be > 0"),
        ({"sigma": 0.25, "n": 0}, "n"),
        ({"sigma": 0.25, "n0": 2.5}, "positive integer"),
        ({"sigma": 0.25, "n": "many"}, "positive integer"),
        ({"sigma": 0.25, "alpha": 0}, "alpha"),
        ({"sigma": 0.25, "alpha": 1.5}, "alpha"),
        ({"sigma": 0.25, "radii": [0.25, -0.5]}, "radii must be >= 0"),
        ({"sigma": 0.25, "batch": 0}, "batch"),
    ],
)
def test_bad_parameters_are_one_sentence(params: dict[str, Any], words: str) -> None:
    entry = {"kind": "randomized-smoothing", "name": "rs", **params}
    with pytest.raises(ConfigError) as caught:
        suite_from_data([entry], "image-classification")
    message = str(caught.value)
    assert words in message and "\n" not in message, message


@pytest.mark.parametrize("task", ["language-modeling", "semantic-segmentation"])
def test_refused_outside_classification(task: str) -> None:
    entry = {"kind": "randomized-smoothing", "sigma": 0.25}
    with pytest.raises(ConfigError, match="applies to image-classification models"):
        suite_from_data([entry], task)


def test_bad_suite_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    suite = tmp_path / "bad.toml"
    suite.write_text(
        'name = "bad"\nversion = 1\n[[perturbations]]\nkind = "randomized-smoothing"\n'
        "sigma = 0.25\nalpha = 1.0\n"
    )
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["eval", "vit_nano_fmnist", "-s", str(suite), "-o", str(out)])
    assert result.exit_code == 2
    assert "alpha" in result.output and "Traceback" not in result.output
    assert not out.exists()
