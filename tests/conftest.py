"""Shared fixtures: a real Fashion-MNIST slice and a small classifier trained on it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from robench.data import BUILTIN_DATASETS
from robench.data.idx import read_idx

FASHION_MNIST_DIR = BUILTIN_DATASETS["fashion-mnist"].path  # installed by `make data`


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `gpu` are skipped where torch sees no CUDA GPU (CI): the summary counts
    them as skipped, with the reason."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (make test-gpu on a GPU machine)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


def _load_split(split: str, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    prefix = "t10k" if split == "test" else "train"
    images = read_idx(FASHION_MNIST_DIR / f"{prefix}-images-idx3-ubyte.gz")[:n]
    labels = read_idx(FASHION_MNIST_DIR / f"{prefix}-labels-idx1-ubyte.gz")[:n]
    x = torch.from_numpy(images.copy()).float().div_(255).unsqueeze(1)  # (n, 1, 28, 28)
    return x, torch.from_numpy(labels.astype("int64"))


@pytest.fixture(scope="session")
def fashion_mnist_dir() -> Path:
    if not (FASHION_MNIST_DIR / "t10k-images-idx3-ubyte.gz").exists():
        pytest.fail(
            "Fashion-MNIST is missing: run `make data` (Debian package dataset-fashion-mnist)"
        )
    return FASHION_MNIST_DIR


@pytest.fixture(scope="session")
def fmnist_test(fashion_mnist_dir: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """The first 512 Fashion-MNIST test images in [0, 1], shape (512, 1, 28, 28), and labels."""
    return _load_split("test", 512)


class _Normalize(nn.Module):
    def __init__(self, mean: float, std: float) -> None:
        super().__init__()
        self.mean, self.std = mean, std

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


@pytest.fixture(scope="session")
def trained_classifier(fashion_mnist_dir: Path) -> nn.Module:
    """A small CNN (normalisation inside, pixel-space input) trained for ~2 s on 4096 images.

    Reaches roughly 75-80% test accuracy: good enough that attacks have something to break.
    """
    torch.manual_seed(0)
    x, y = _load_split("train", 4096)
    model = nn.Sequential(
        _Normalize(0.2860, 0.3530),
        nn.Conv2d(1, 8, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(16 * 7 * 7, 10),
    )
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(3):
        for i in range(0, len(x), 128):
            loss = nn.functional.cross_entropy(model(x[i : i + 128]), y[i : i + 128])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


@pytest.fixture(autouse=True)
def _throughput_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """`robench eval` saves its throughput (robench/evaluation/planning/throughput.py): in
    tests, to a scratch folder, never the user's cache."""
    monkeypatch.setenv("ROBENCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
