"""`TopKRecords`: the per-sample record of a classifier, whatever its inputs are:
`{"y": true class, "topk": the model's top-5 classes}` and four calibration scalars of its
softmax probabilities (`p_pred`, `p_target`, `logp_target`, `p_sumsq`: docs/formats.md,
"Calibration metrics", and why `p_sumsq` is kept). Image and text classification share it,
so their metrics and McNemar pairing are the same; records written before the scalars existed
lack them, and the calibration metrics (`requires = "p_target"`) are not reported there.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from robench._core.errors import ConfigError, DataError
from robench.tasks.base import Columns, ModelCheck, Record
from robench.tasks.finite_values import require_finite

TOP_K = 5  # predictions kept per sample: enough for top-1 and top-5 accuracy


class TopKRecords:
    """`score`, `target` and `outputs` of a task whose model returns class logits (B, K)."""

    def score(self, model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> Columns:
        with torch.inference_mode():  # cheaper than no_grad; nothing here needs autograd
            logits = model(inputs)
            require_finite(logits, "logits")
            _check_labels(targets, logits.shape[-1])
            k = min(TOP_K, logits.shape[-1])
            topk = logits.topk(k, dim=-1).indices
            columns = {"y": targets.tolist(), "topk": topk.tolist()}
            columns.update(calibration_columns(logits, targets, topk[:, 0]))
        return columns

    def target(self, record: Record) -> Any:
        return record["y"]

    def outputs(self, record: Record) -> dict[str, Any]:
        # An attack's own per-sample columns reach the report through its `columns`.
        return {"prediction": record["topk"][0]}


def _check_labels(targets: torch.Tensor, classes: int) -> None:
    """Labels are indices of the model's outputs; one outside them (labels 10-19 for a
    10-class model) would otherwise fail inside torch's gather."""
    if targets.numel() == 0:
        return
    low, high = torch.aminmax(targets)
    if bool(low >= 0) and bool(high < classes):
        return
    bad = int(high) if int(high) >= classes else int(low)
    raise DataError(
        f"the data has label {bad} but the model predicts {classes} classes (labels "
        f"0..{classes - 1}); labels must be indices of the model's outputs: map them onto its "
        "classes (--class-map, or relabel the data) or evaluate a model of these classes."
    )


def check_labels_fit(dataset: Any, model: nn.Module, inputs: torch.Tensor, advice: str) -> None:
    """The data's labels (`dataset.targets`) must be among the model's outputs; `advice`
    ends the error with what to evaluate instead."""
    with torch.no_grad():
        n_outputs = model(inputs[:1]).shape[-1]
    largest = max(getattr(dataset, "targets", []), default=-1)
    if largest >= n_outputs:
        raise DataError(
            f"the data has labels up to {largest} but the model has {n_outputs} classes "
            f"(0..{n_outputs - 1}); {advice}"
        )


def check_classifier(model: nn.Module, inputs: torch.Tensor, kind: str, varies: str) -> ModelCheck:
    """Logits (B, K) of a classifier of `kind` inputs ("text": B texts), finite, the same for
    the same inputs twice; `varies` names what a randomized model changes between runs."""
    with torch.no_grad():
        first, second = model(inputs), model(inputs)
    if first.dim() != 2 or first.shape[0] != inputs.shape[0]:
        raise ConfigError(
            f"a {kind} classifier must return logits (batch, classes); this model returned "
            f"shape {tuple(first.shape)} for {inputs.shape[0]} {kind}s."
        )
    found = ModelCheck(randomized=not torch.equal(first, second))
    if not torch.isfinite(first).all():
        found.warnings.append("the model returned non-finite logits on the first batch")
    if found.randomized:
        found.warnings.append(
            f"the model is randomized: two passes over the same {kind}s differ, so {varies} "
            "vary between runs"
        )
    return found


def calibration_columns(
    logits: torch.Tensor, targets: torch.Tensor, predicted: torch.Tensor
) -> Columns:
    """`p_pred`, `p_target`, `logp_target` and `p_sumsq` of logits (B, K), in float32 (as
    torchmetrics and a direct torch computation take them, even under --amp)."""
    logits = logits.float()
    probs = logits.softmax(dim=-1)  # (B, K)
    logp = logits.log_softmax(dim=-1)  # (B, K)
    rows = targets.long().unsqueeze(1)  # (B, 1)
    # One transfer to the host for the four columns: (4, B).
    stacked = torch.stack(
        (
            probs.gather(1, predicted.long().unsqueeze(1)).squeeze(1),
            probs.gather(1, rows).squeeze(1),
            logp.gather(1, rows).squeeze(1),
            probs.square().sum(dim=-1),
        )
    ).tolist()
    return dict(zip(("p_pred", "p_target", "logp_target", "p_sumsq"), stacked, strict=True))
