"""Segmentation metrics as mmsegmentation defines them: mIoU, aAcc and mAcc over a dataset.

Each image contributes per-class pixel counts (mmseg `IoUMetric.intersect_and_union`); a
dataset's metrics are ratios of the summed counts (mmseg `total_area_to_metrics`), as
fractions where mmseg reports x 100. Definitions: docs/segmentation-data.md, "Metrics".
Intervals resample images (`WeightedStatistic`), keeping each image's (4, K) counts together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from robench.results.stats.bootstrap import WeightedStatistic

# numpy is imported where used: the metric registry, `robench compare` and binary gates
# import this module without it.
if TYPE_CHECKING:
    import numpy as np


INTERSECT, UNION, PRED_AREA, LABEL_AREA = range(4)  # rows of an image's (4, K) counts


def pixel_counts(pred: Any, labels: Any, num_classes: int, ignore_index: int = 255) -> np.ndarray:
    """One image's (4, K) int64 counts: intersect, union, pred area, label area per class.

    `pred` and `labels` are (H, W) integer maps (numpy or torch) of the same size. Only
    pixels labelled with a class 0..K-1 other than `ignore_index` are scored, so
    `label_maps.IGNORE_INDEX` (255) and `PAD_INDEX` (-1) are left out (this part may not
    import robench.data, hence the literal); as in mmseg's `torch.histc(min=0, max=K-1)`,
    predictions outside 0..K-1 count in no class.
    """
    pred_arr, label_arr = _as_numpy(pred), _as_numpy(labels)
    if pred_arr.shape != label_arr.shape:
        raise ValueError(f"pred {pred_arr.shape} and labels {label_arr.shape} differ in size")
    one = (1, 1, -1)  # a batch of one map: the counts do not depend on the map's shape
    return batch_pixel_counts(
        pred_arr.reshape(one), label_arr.reshape(one), num_classes, ignore_index
    )[0]


def batch_pixel_counts(
    pred: Any, labels: Any, num_classes: int, ignore_index: int = 255
) -> np.ndarray:
    """`pixel_counts` of a batch of same-size maps (B, H, W) at once: (B, 4, K) int64.

    Three bincounts over the whole batch, each pixel's class offset by its sample's K bins,
    instead of three per image: what keeps scoring cheap beside the model's forward."""
    import numpy as np

    pred_arr, label_arr = _as_numpy(pred), _as_numpy(labels)
    if pred_arr.shape != label_arr.shape or pred_arr.ndim != 3:
        raise ValueError(f"pred {pred_arr.shape} and labels {label_arr.shape}: expected (B, H, W)")
    n, k = len(label_arr), num_classes
    offset = (np.arange(n) * k)[:, None, None]
    scored = (label_arr >= 0) & (label_arr < k) & (label_arr != ignore_index)
    in_range = scored & (pred_arr >= 0) & (pred_arr < k)
    hits = in_range & (pred_arr == label_arr)
    intersect = np.bincount((label_arr + offset)[hits], minlength=n * k)
    pred_area = np.bincount((pred_arr + offset)[in_range], minlength=n * k)
    label_area = np.bincount((label_arr + offset)[scored], minlength=n * k)
    union = pred_area + label_area - intersect
    return np.stack([intersect, union, pred_area, label_area]).reshape(4, n, k).transpose(1, 0, 2)


def _as_numpy(value: Any) -> np.ndarray:
    import numpy as np

    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    return np.asarray(value).astype(np.int64)


def _nanmean(ratios: np.ndarray) -> np.ndarray:
    """Mean over the last axis, ignoring NaN; NaN where all are NaN (no warning)."""
    import numpy as np

    valid = ~np.isnan(ratios)
    count = valid.sum(axis=-1)
    total = np.where(valid, ratios, 0.0).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _class_mean(row: int) -> Callable[[np.ndarray], np.ndarray]:
    """The mean over classes of intersect / `row` (UNION: mIoU, LABEL_AREA: mAcc)."""
    return lambda totals: _nanmean(_ratio(totals[..., INTERSECT, :], totals[..., row, :]))


def _pixel_accuracy(totals: np.ndarray) -> np.ndarray:
    return _ratio(totals[..., INTERSECT, :].sum(axis=-1), totals[..., LABEL_AREA, :].sum(axis=-1))


# name -> function of summed counts (..., 4, K) -> (...)
SEGMENTATION_STATISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "miou": _class_mean(UNION),
    "mean_accuracy": _class_mean(LABEL_AREA),
    "pixel_accuracy": _pixel_accuracy,
}


def per_class_metrics(counts: np.ndarray) -> dict[str, np.ndarray]:
    """Per-class IoU and accuracy (K,) of a stack of images' counts (N, 4, K); NaN where the
    class's union (IoU) or label area (accuracy) is 0, as mmseg reports them."""
    import numpy as np

    totals = np.asarray(counts, dtype=float).reshape(-1, 4, np.shape(counts)[-1]).sum(axis=0)
    return {
        "iou": _ratio(totals[INTERSECT], totals[UNION]),
        "accuracy": _ratio(totals[INTERSECT], totals[LABEL_AREA]),
    }


def dataset_metrics(counts: np.ndarray) -> dict[str, float]:
    """mIoU, mean accuracy and pixel accuracy (fractions) of images' counts (N, 4, K)."""

    return {name: CountsStatistic(name)(counts) for name in SEGMENTATION_STATISTICS}


def as_counts(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Per-image counts as a float (N, 4, K) array, from (N, 4, K) or flat (N, 4K) rows."""
    import numpy as np

    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return np.zeros((0, 4, 0))
    return array.reshape(array.shape[0], 4, -1)


@dataclass(frozen=True)
class CountsStatistic(WeightedStatistic):
    """One of `SEGMENTATION_STATISTICS` of summed per-image counts.

    Shaped like `ratio_statistics.RatioOfSums`: `values` takes images' counts (..., N, 4, K)
    (a stack of resamples included) and returns (...); called on per-image counts (N, 4, K)
    or flat (N, 4K) rows, it returns a float (NaN for no images)."""

    name: str

    def values(self, counts: np.ndarray) -> np.ndarray:
        return self.of_totals(counts.sum(axis=-3))

    def of_totals(self, totals: np.ndarray) -> np.ndarray:
        """The statistic of summed counts (..., 4, K)."""
        import numpy as np

        return np.asarray(SEGMENTATION_STATISTICS[self.name](totals))

    def of_weights(self, weights: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The statistic of resamples given by `weights` (count, N) of counts (N, 4, K)."""
        import numpy as np

        return self.of_totals(np.tensordot(weights, counts, axes=1))

    def rows(self, values: Sequence[Any] | np.ndarray) -> np.ndarray:
        return as_counts(values)

    unit: ClassVar[str] = "images"  # what a resample draws (the gate's description)
