"""Writes tests/golden/segmentation_metrics_mmseg.json: mmsegmentation's own numbers on a fixture.

Run once, by hand, with the mmsegmentation wheel unpacked (it is not a dependency):

    pip download mmsegmentation==1.2.2 --no-deps -d /tmp/mmseg
    cd /tmp/mmseg && unzip -q mmsegmentation-1.2.2-py3-none-any.whl
    python benchmarks/mmseg_metrics_oracle.py /tmp/mmseg/mmseg/evaluation/metrics/iou_metric.py

The two static methods `IoUMetric.intersect_and_union` and `IoUMetric.total_area_to_metrics`
are cut out of the file with `ast` and run with torch and numpy only (importing mmseg needs
mmengine and mmcv). Their per-image counts are summed as `IoUMetric.compute_metrics` sums
them, and mIoU / mAcc are `np.nanmean` of the per-class values, as its summary table is.
"""

from __future__ import annotations

import ast
import json
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Optional

import numpy as np
import torch

NUM_CLASSES = 6  # class 5 appears in no label and no prediction: union 0, left out
IGNORE = 255
OUT = Path(__file__).resolve().parents[1] / "tests" / "golden" / "segmentation_metrics_mmseg.json"


def mmseg_functions(path: Path) -> dict:
    """The two static methods of IoUMetric, defined from the file's source."""
    tree = ast.parse(path.read_text())
    wanted = {"intersect_and_union", "total_area_to_metrics"}
    namespace = {
        "torch": torch,
        "np": np,
        "OrderedDict": OrderedDict,
        "List": list,
        "Optional": Optional,
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in wanted:
            node.decorator_list = []
            exec(compile(ast.Module([node], []), str(path), "exec"), namespace)
    return namespace


def fixture() -> list[dict]:
    """Images of different sizes: random labels in 0..4 with ignore pixels; predictions that
    match them half the time and otherwise pick 0..4 (class 4 predicted where never labelled
    in image 0)."""
    rng = np.random.default_rng(20260526)
    images = []
    for height, width in [(7, 9), (10, 6), (8, 8), (5, 11), (12, 4)]:
        labels = rng.integers(0, 4, size=(height, width))
        labels[rng.random((height, width)) < 0.15] = IGNORE
        noise = rng.integers(0, 5, size=(height, width))
        pred = np.where(rng.random((height, width)) < 0.5, labels, noise)
        pred[pred == IGNORE] = 4
        images.append({"pred": pred.tolist(), "labels": labels.tolist()})
    return images


def main(iou_metric_py: str) -> None:
    fns = mmseg_functions(Path(iou_metric_py))
    images = fixture()
    per_image = [
        fns["intersect_and_union"](
            torch.tensor(im["pred"]), torch.tensor(im["labels"]), NUM_CLASSES, IGNORE
        )
        for im in images
    ]
    for im, counts in zip(images, per_image, strict=True):
        im["counts"] = [[int(v) for v in c.tolist()] for c in counts]
    totals = [sum(c[i] for c in per_image) for i in range(4)]
    ret = fns["total_area_to_metrics"](*totals, metrics=["mIoU"])
    expected = {
        "aAcc": float(ret["aAcc"]),
        "mIoU": float(np.nanmean(ret["IoU"])),
        "mAcc": float(np.nanmean(ret["Acc"])),
        "IoU": [None if np.isnan(v) else float(v) for v in ret["IoU"]],
        "Acc": [None if np.isnan(v) else float(v) for v in ret["Acc"]],
    }
    OUT.write_text(
        json.dumps(
            {
                "provenance": "mmsegmentation 1.2.2 (PyPI wheel), "
                "mmseg/evaluation/metrics/iou_metric.py: IoUMetric.intersect_and_union and "
                "IoUMetric.total_area_to_metrics; written by benchmarks/mmseg_metrics_oracle.py",
                "num_classes": NUM_CLASSES,
                "ignore_index": IGNORE,
                "expected": expected,
                "images": images,
            }
        )
        + "\n"
    )
    print(json.dumps(expected, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
