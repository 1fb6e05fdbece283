"""`TopKRecords`: the per-sample record of a classifier, whatever its inputs are.

A sample's record is `{"y": true class, "topk": the model's top-5 classes}`; `top1` and
`top5` (results/stats/metrics.py) read it and the report keeps the top-1 class as `prediction`.
Image and text classification share it, so their metrics and McNemar pairing are the same.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from robench.tasks.base import Columns, Record

TOP_K = 5  # predictions kept per sample: enough for top-1 and top-5 accuracy


class TopKRecords:
    """`score`, `target` and `outputs` of a task whose model returns class logits (B, K)."""

    def score(self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> Columns:
        with torch.inference_mode():  # cheaper than no_grad; nothing here needs autograd
            logits = model(inputs)
        k = min(TOP_K, logits.shape[-1])
        return {"y": targets.tolist(), "topk": logits.topk(k, dim=-1).indices.tolist()}

    def target(self, record: Record) -> Any:
        return record["y"]

    def outputs(self, record: Record) -> dict[str, Any]:
        # An attack's own per-sample columns reach the report through its `columns`.
        return {"prediction": record["topk"][0]}
