"""Reading schema version 1 reports: one dataset, image classification, labels and top-1
predictions stored side by side. `read_report` upgrades them to the current schema on read,
so `compare` and `gate` accept reports written by older robench versions.
"""

from __future__ import annotations

from typing import Any

DATASET = "default"  # the name version 1's single dataset gets (report.DEFAULT_DATASET)


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A schema version 1 report (one dataset, image classification) as version 2."""
    data = dict(data)
    data["schema_version"] = 2
    data["task"] = "image-classification"
    data["datasets"] = {DATASET: data.pop("data")}
    data["results"] = [{**r, "dataset": DATASET} for r in data.get("results", [])]
    model = dict(data["model"])
    elliptical = model.pop("elliptical", None)
    model["extensions"] = {"elliptical": elliptical} if elliptical else {}
    data["model"] = model
    old = data["samples"]
    labels = old["labels"]
    values = {}
    for name, predictions in old["predictions"].items():
        values[name] = {
            "prediction": predictions,
            "top1": [p == y for p, y in zip(predictions, labels, strict=False)],
        }
        if name in old.get("top5_correct", {}):
            values[name]["top5"] = old["top5_correct"][name]
    data["samples"] = {DATASET: {"indices": old["indices"], "targets": labels, "values": values}}
    return data
