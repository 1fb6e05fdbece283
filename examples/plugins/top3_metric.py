"""A metric from a plugin: top-3 accuracy.

Image and text classification keep each sample's five best classes (`{"y", "topk"}`), so a
top-k accuracy is one function of that record. Ask for it in a suite (`metrics = ["top1",
"top3"]`) and run with `--import examples/plugins/top3_metric.py`; `robench compare` and
`robench gate` then show and pair it like top-1 (McNemar's test on the paired samples).
"""

from __future__ import annotations

from robench.registry import Metric, MetricDisplay, register_metric

register_metric(
    Metric(
        name="top3",
        description="top-3 accuracy (fraction of samples)",
        higher_is_better=True,
        per_sample=lambda record: record["y"] in record["topk"][:3],
        display=MetricDisplay("top-3", scale=100.0, unit="%", diff_unit="pp"),
        task=("image-classification", "text-classification"),
        paired_test="binary",  # exact McNemar on the paired samples
    )
)
