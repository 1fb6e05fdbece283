"""Robustness checks inside a training loop: every N steps, `robench.evaluate` scores the
model being trained under FGSM and PGD on 256 test images and the numbers are logged beside
the loss. The model is handed over as it is (in training mode, on its device); robench puts
it in eval mode for the check and restores it afterwards, so training carries on unchanged.

    python examples/train_with_robustness_checks.py --steps 300 --every 100

Needs the built-in Fashion-MNIST (`make demo`, or `apt-get install dataset-fashion-mnist`,
or ROBENCH_FASHION_MNIST_DIR). Writes nothing unless --out DIR is given (then one JSON
report per check, readable by `robench compare` and `robench gate`).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import torch
from torch import nn

import robench
from robench.data import BUILTIN_DATASETS
from robench.data.idx import read_idx

logger = logging.getLogger("train_with_robustness_checks")


def fashion_mnist_train(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first n training images as pixels in [0, 1], (n, 1, 28, 28), and their labels."""
    folder = BUILTIN_DATASETS["fashion-mnist"].path
    images = read_idx(folder / "train-images-idx3-ubyte.gz")[:n]
    labels = read_idx(folder / "train-labels-idx1-ubyte.gz")[:n]
    return torch.from_numpy(images).float().div(255).unsqueeze(1), torch.from_numpy(labels).long()


def small_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 10),
    )


def robustness_check(model: nn.Module, step: int, out: Path | None) -> dict[str, float]:
    """Top-1 accuracy clean, under FGSM and under PGD-5 (the smoke suite) on 256 test images."""
    report = robench.evaluate(
        model,
        suite="smoke",
        data="fashion-mnist",
        limit=256,
        model_name=f"small-cnn@{step}",
        progress=False,
        out=out / f"step-{step}.json" if out else None,
    )
    frame = report.to_pandas()
    top1 = frame[frame.metric == "top1"].set_index("perturbation")["value"]
    return {str(name): float(value) for name, value in top1.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--every", type=int, default=100, help="check robustness every N steps")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", type=Path, default=None, help="write each check's report here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(0)
    x_train, y_train = fashion_mnist_train(args.steps * args.batch_size)
    model = small_cnn()
    optimiser = torch.optim.Adam(model.parameters(), lr=2e-3)
    model.train()
    for step in range(1, args.steps + 1):
        start = ((step - 1) * args.batch_size) % len(x_train)
        x, y = x_train[start : start + args.batch_size], y_train[start : start + args.batch_size]
        loss = nn.functional.cross_entropy(model(x), y)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % args.every == 0:
            accuracy = robustness_check(model, step, args.out)
            shown = "  ".join(f"{name} {100 * value:.1f}%" for name, value in accuracy.items())
            logger.info("step %d  loss %.3f  top-1: %s", step, loss.item(), shown)
            assert model.training, "evaluate must leave the model in training mode"


if __name__ == "__main__":
    main()
