"""Segmentation metrics against mmsegmentation's own numbers and hand-computed cases."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from robench.data.segmentation.label_maps import IGNORE_INDEX, PAD_INDEX
from robench.results.stats.bootstrap import bootstrap, centred_interval, paired_summary
from robench.results.stats.segmentation_metrics import (
    CountsStatistic,
    as_counts,
    dataset_metrics,
    per_class_metrics,
    pixel_counts,
)

GOLDEN = Path(__file__).parent / "golden" / "segmentation_metrics_mmseg.json"


def test_matches_mmsegmentation_on_the_golden_fixture() -> None:
    # Numbers written by benchmarks/mmseg_metrics_oracle.py from mmseg 1.2.2's iou_metric.py.
    golden = json.loads(GOLDEN.read_text())
    k = golden["num_classes"]
    counts = np.stack(
        [pixel_counts(np.array(im["pred"]), np.array(im["labels"]), k) for im in golden["images"]]
    )
    for ours, theirs in zip(counts, golden["images"], strict=True):
        assert ours.tolist() == theirs["counts"]
    metrics = dataset_metrics(counts)
    expected = golden["expected"]
    assert metrics["miou"] == pytest.approx(expected["mIoU"], rel=1e-6)
    assert metrics["mean_accuracy"] == pytest.approx(expected["mAcc"], rel=1e-6)
    assert metrics["pixel_accuracy"] == pytest.approx(expected["aAcc"], rel=1e-6)
    per_class = per_class_metrics(counts)
    for ours_row, theirs_row in [
        (per_class["iou"], expected["IoU"]),
        (per_class["accuracy"], expected["Acc"]),
    ]:
        for ours_value, theirs_value in zip(ours_row, theirs_row, strict=True):
            if theirs_value is None:
                assert math.isnan(ours_value)
            else:
                assert ours_value == pytest.approx(theirs_value, rel=1e-6)


def test_hand_computed_counts_and_metrics() -> None:
    labels = np.array([[0, 0, 1], [1, IGNORE_INDEX, PAD_INDEX]])
    pred = np.array([[0, 2, 1], [0, 2, 2]])  # class 2 predicted, never labelled; 3 nowhere
    counts = pixel_counts(pred, labels, num_classes=4)
    # scored pixels: (0,0) 0->0, (0,1) 0->2, (0,2) 1->1, (1,0) 1->0; ignore and pad left out
    assert counts.tolist() == [
        [1, 1, 0, 0],  # intersect
        [3, 2, 1, 0],  # union
        [2, 1, 1, 0],  # pred area
        [2, 2, 0, 0],  # label area
    ]
    metrics = dataset_metrics(counts[None])
    # IoU: 1/3, 1/2, 0 (predicted, absent from labels), class 3 (union 0) left out
    assert metrics["miou"] == pytest.approx((1 / 3 + 1 / 2 + 0) / 3)
    assert metrics["mean_accuracy"] == pytest.approx((1 / 2 + 1 / 2) / 2)
    assert metrics["pixel_accuracy"] == pytest.approx(2 / 4)


def test_counts_accept_tensors_and_sum_over_images() -> None:
    a = pixel_counts(torch.tensor([[1, 1]]), torch.tensor([[1, 0]]), 2)
    b = pixel_counts(torch.tensor([[0, 0]]), torch.tensor([[0, 0]]), 2)
    assert a.dtype == np.int64
    # dataset metrics are ratios of sums, not means of per-image ratios
    assert dataset_metrics(np.stack([a, b]))["pixel_accuracy"] == pytest.approx(3 / 4)
    assert dataset_metrics(np.stack([a, b]))["miou"] == pytest.approx((2 / 3 + 1 / 2) / 2)


def test_size_mismatch_is_refused() -> None:
    with pytest.raises(ValueError, match="differ in size"):
        pixel_counts(np.zeros((2, 2), int), np.zeros((2, 3), int), 2)


def _images(seed: int, n: int = 40, k: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        labels = rng.integers(0, k, size=(6, 6))
        pred = np.where(rng.random((6, 6)) < 0.6, labels, rng.integers(0, k, size=(6, 6)))
        out.append(pixel_counts(pred, labels, k))
    return np.stack(out)


def test_bootstrap_interval_brackets_the_value_and_is_seeded() -> None:
    counts = _images(1)
    miou = CountsStatistic("miou")
    low, high = miou.interval(counts)
    assert low < miou(counts) < high
    assert miou.interval(counts) == (low, high)
    # flat (N, 4K) rows, as a report stores them, give the same interval
    assert miou.interval(counts.reshape(len(counts), -1).tolist()) == (low, high)
    assert all(math.isnan(v) for v in miou.interval([]))


def test_paired_bootstrap_of_identical_runs_is_zero_and_of_a_worse_run_is_negative() -> None:
    counts = _images(2)
    stat = CountsStatistic("pixel_accuracy")
    diff, (low, high), p_value, sd = stat.paired(counts, counts, 2000, 0, "two-sided")
    assert (diff, low, high, sd) == (0.0, 0.0, 0.0, 0.0)
    worse = counts.copy()
    worse[:, 0] = worse[:, 0] // 2  # half the hits
    diff, (low, high), p_value, _ = stat.paired(counts, worse, 2000, 0, "two-sided")
    assert diff < 0 and high < 0 and p_value < 0.01


def test_bootstrap_sums_the_drawn_images() -> None:
    # the interval is the value +- 1.96 sd of the statistic of each resample's drawn images
    counts = _images(3, n=25)
    miou = CountsStatistic("miou")
    drawn = np.random.default_rng(5).integers(0, 25, size=(300, 25))
    half = 1.959963984540054 * np.std(miou.values(counts[drawn]), ddof=1)
    value = miou(counts)
    naive = (max(0.0, value - half), min(1.0, value + half))
    assert miou.interval(counts, n_resamples=300, seed=5) == pytest.approx(naive)


def test_statistic_methods_are_the_shared_bootstrap() -> None:
    counts, other = _images(4), _images(5)
    miou = CountsStatistic("miou")
    replicates = bootstrap(miou.of_weights, as_counts(counts))
    assert miou.interval(counts) == centred_interval(miou(counts), replicates, (0.0, 1.0))
    diffs = bootstrap(
        lambda w, b, c: miou.of_weights(w, c) - miou.of_weights(w, b),
        as_counts(counts),
        as_counts(other),
        n_resamples=500,
        seed=1,
    )
    expected = paired_summary(miou(other) - miou(counts), diffs, len(counts), "two-sided")
    assert miou.paired(counts, other, 500, 1, "two-sided") == expected


def test_batch_counts_equal_each_images_counts() -> None:
    from robench.results.stats.segmentation_metrics import batch_pixel_counts

    rng = np.random.default_rng(4)
    labels = rng.integers(0, 5, size=(6, 9, 7))
    labels[0, :2] = 255  # ignored pixels
    labels[1, :, :3] = -1  # padding
    labels[2] = 255  # an image with nothing scored
    pred = rng.integers(0, 6, size=(6, 9, 7))  # 5: outside the 5 classes, counted nowhere
    found = batch_pixel_counts(pred, labels, 5)
    assert found.shape == (6, 4, 5) and found.dtype == np.int64
    for i in range(6):
        assert np.array_equal(found[i], pixel_counts(pred[i], labels[i], 5))
    assert found[2].sum() == 0 and found[0, 3].sum() == 7 * 7
