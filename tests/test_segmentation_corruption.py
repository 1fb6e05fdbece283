"""A corruption on a segmentation task changes the image and never the label map, and what a
corruption would hide is refused: images outside [0, 1] (a corruption maps any input into
[0, 1], so they were scored as if valid) and label maps with values that are no class of the
model (their metrics came out empty, and PGD failed inside its loss)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import Dataset

import robench
from robench._core.errors import DataError
from robench.evaluation.perturbed_samples import PerturbedSamples
from robench.perturbations import build_perturbation
from robench.perturbations.corruptions import ALL as ALL_CORRUPTIONS

CLASSES = 4


class _Scenes(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Three 3x32x32 images with label maps of every class and some unscored pixels."""

    def __init__(self) -> None:
        generator = torch.Generator().manual_seed(0)
        self.images = torch.rand(3, 3, 32, 32, generator=generator)
        self.maps = torch.randint(0, CLASSES, (3, 32, 32), generator=generator)
        self.maps[:, :2] = 255

    def __len__(self) -> int:
        return 3

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.images[index], self.maps[index]


@pytest.mark.parametrize("corruption", ALL_CORRUPTIONS)
def test_a_corruption_changes_the_image_and_never_the_label_map(corruption: str) -> None:
    scenes = _Scenes()
    perturbation = build_perturbation("corruption", {"corruption": corruption, "severity": 3})
    loaded = PerturbedSamples(scenes, perturbation, seed=0, name=corruption)  # type: ignore[arg-type]
    for index in range(len(scenes)):
        image, label_map = loaded[index]
        assert torch.equal(label_map, scenes.maps[index])
        assert label_map.dtype == torch.int64
        assert image.shape == scenes.images[index].shape
        assert not torch.equal(image, scenes.images[index]), corruption


class _ConstantSegmenter(nn.Module):
    """Predicts class 1 at every pixel: its pixel accuracy is the share of class-1 pixels of
    the label maps, so it moves only if a label map does."""

    robench_task = "semantic-segmentation"

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(()))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(images.shape[0], CLASSES, *images.shape[2:])
        logits[:, 1] = 10.0
        return logits + self.weight * images.mean(dim=1, keepdim=True)


@pytest.fixture()
def quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)  # the constant model's zero-gradient warnings
    yield
    logging.disable(logging.NOTSET)


@pytest.mark.usefixtures("quiet")
def test_every_corruption_result_scores_the_same_label_maps_as_clean() -> None:
    scenes = _Scenes()
    suite: list[dict[str, Any]] = [
        {"kind": "clean"},
        {"kind": "corruption", "corruptions": ["gaussian_noise", "elastic_transform", "fog"],
         "severities": [1, 5]},
    ]  # fmt: skip
    report = robench.evaluate(
        _ConstantSegmenter(), suite=suite, data=(scenes.images, scenes.maps), progress=False
    )
    scored = scenes.maps[scenes.maps != 255]
    share = int((scored == 1).sum()) / scored.numel()
    accuracies = {r.name: r.metrics["pixel_accuracy"].value for r in report.results}
    assert len(accuracies) == 7
    assert all(value == pytest.approx(share, abs=1e-12) for value in accuracies.values())


@pytest.mark.usefixtures("quiet")
@pytest.mark.parametrize(
    "entry",
    [{"kind": "corruption", "corruption": "fog", "severity": 3}, {"kind": "clean"}],
    ids=["corruption", "clean"],
)
def test_images_outside_the_unit_range_are_refused_under_a_corruption_too(entry: dict) -> None:
    scenes = _Scenes()
    with pytest.raises(robench.InputError, match=r"sample 0 .* outside \[0, 1\].*divide by 255"):
        robench.evaluate(
            _ConstantSegmenter(), suite=[entry], data=(scenes.images * 255, scenes.maps)
        )


def test_a_nan_image_is_named_before_a_corruption_hides_it() -> None:
    scenes = _Scenes()
    scenes.images[2, 0, 5, 5] = float("nan")
    perturbation = build_perturbation("corruption", {"corruption": "contrast", "severity": 1})
    loaded = PerturbedSamples(scenes, perturbation, seed=0, name="contrast")  # type: ignore[arg-type]
    loaded[1]
    with pytest.raises(DataError, match=r"sample 2 .* NaN or inf .*fix or drop"):
        loaded[2]


@pytest.mark.usefixtures("quiet")
@pytest.mark.parametrize("bad", [CLASSES, 254, -1])
@pytest.mark.parametrize(
    "entry",
    [
        {"kind": "clean"},
        {"kind": "corruption", "corruption": "fog", "severity": 3},
        {"kind": "pgd", "eps": "1/255", "steps": 1},
    ],
    ids=["clean", "corruption", "pgd"],
)
def test_a_label_that_is_no_class_of_the_model_is_refused(entry: dict, bad: int) -> None:
    scenes = _Scenes()
    scenes.maps[1, 7, 7] = bad
    with pytest.raises(robench.InputError, match=rf"item 1 .* holds label {bad}, not one of"):
        robench.evaluate(_ConstantSegmenter(), suite=[entry], data=(scenes.images, scenes.maps))


def test_a_pixel_kind_for_token_sequences_is_refused_under_a_segmentation_suite() -> None:
    scenes = _Scenes()
    with pytest.raises(robench.InputError, match=r"pixel-noise.*sequence-classification"):
        robench.evaluate(
            _ConstantSegmenter(),
            suite=[{"kind": "pixel-noise", "std": 0.1}],
            data=(scenes.images, scenes.maps),
            task="semantic-segmentation",
        )
