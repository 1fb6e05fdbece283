"""The runner scores the identity (clean) on batches as loaded, and checks its data once per
result (the first batch) rather than every batch; attacks stay checked on every batch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import Dataset

from robench._core.errors import DataError
from robench.evaluation.runner import EvalData, Job, run_plan
from robench.evaluation.store.sample_store import SampleStore
from robench.evaluation.suites import PlannedPerturbation
from robench.perturbations.clean import Clean, CleanParams
from robench.tasks import load_task


class _Pixels(Dataset):
    """`n` 1x4x4 images of value i/n (label i % 3); `bad` images hold `value` instead."""

    def __init__(self, n: int, bad: dict[int, float] | None = None) -> None:
        self.n, self.bad = n, bad or {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        value = self.bad.get(i, i / self.n)
        return torch.full((1, 4, 4), float(value)), i % 3


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(16, 3)).eval()


def _run(dataset: Dataset, tmp_path: Path, batch_size: int = 4) -> dict[int, dict]:
    planned = PlannedPerturbation("clean", "clean", CleanParams(), max_samples=None)
    job = Job(planned, EvalData(dataset, list(range(len(dataset)))))  # type: ignore[arg-type]
    store = SampleStore(tmp_path / "r.samples.jsonl", {}, resume=False)
    try:
        run_plan(
            _model(),
            load_task("image-classification"),
            [job],
            store,
            batch_size=batch_size,
            seed=0,
            device=torch.device("cpu"),
        )
    finally:
        store.close()
    return store.records["clean"]


def test_clean_scores_batches_as_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: object) -> torch.Tensor:
        raise AssertionError("the identity is not called per batch")

    monkeypatch.setattr(Clean, "perturb", never)
    data = _Pixels(10)
    records = _run(data, tmp_path)
    model = _model()
    with torch.no_grad():
        expected = model(torch.stack([data[i][0] for i in range(10)])).topk(3).indices
    assert sorted(records) == list(range(10))
    assert [records[i]["topk"] for i in range(10)] == expected.tolist()
    assert [records[i]["y"] for i in range(10)] == [i % 3 for i in range(10)]


def test_clean_data_outside_the_unit_range_stops_on_the_first_batch(tmp_path: Path) -> None:
    """The data is at fault, not a perturbation: exit 2 naming the sample."""
    with pytest.raises(DataError, match=r"sample 2 of the data .*outside \[0, 1\]"):
        _run(_Pixels(10, bad={2: 2.0}), tmp_path)
    with pytest.raises(DataError, match=r"sample\(s\) 0 of the data hold NaN or inf"):
        _run(_Pixels(10, bad={0: float("nan")}), tmp_path / "nan")
