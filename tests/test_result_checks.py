"""Always-on checks: PGD weaker than FGSM at the same eps is flagged in every evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest

from robench.data import open_dataset
from robench.data.preprocessing import Preprocessing
from robench.results.report.checks import TOLERANCE, check_attack_order
from robench.results.report.schema import MetricValue, PerturbationResult
from robench.tasks import load_task


def _result(name: str, kind: str, top1: float, eps: float | None, n: int = 100):
    params = {} if eps is None else {"eps": eps}
    metric = MetricValue(value=top1, ci95=(0.0, 1.0), higher_is_better=True)
    return PerturbationResult(
        name=name, kind=kind, params=params, n_samples=n, metrics={"top1": metric}, wall_time_s=0
    )


def test_pgd_weaker_than_fgsm_is_flagged_with_a_pointer_to_sanity() -> None:
    results = [
        _result("clean", "clean", 0.9, None),
        _result("fgsm", "fgsm", 0.1562, 8 / 255),
        _result("pgd-5", "pgd", 0.2031, 8 / 255),
    ]
    (check,) = check_attack_order(results)
    assert check.status == "warn"
    assert check.name == "pgd_at_least_fgsm:pgd-5"
    assert "20.31%" in check.detail and "15.62%" in check.detail and "--sanity" in check.detail
    assert check.values["pgd"] == pytest.approx(0.2031)


def test_pgd_within_tolerance_passes_and_unpaired_results_are_skipped() -> None:
    results = [
        _result("fgsm-1", "fgsm", 0.50, 1 / 255),
        _result("pgd-1", "pgd", 0.50 + TOLERANCE / 2, 1 / 255),
        _result("pgd-4", "pgd", 0.90, 4 / 255),  # no FGSM at 4/255
        _result("fgsm-8", "fgsm", 0.10, 8 / 255, n=50),
        _result("pgd-8", "pgd", 0.90, 8 / 255, n=100),  # other samples: not comparable
    ]
    checks = check_attack_order(results)
    assert [(c.name, c.status) for c in checks] == [("pgd_at_least_fgsm:pgd-1", "pass")]


def test_grayscale_data_for_an_rgb_model_is_a_reported_adaptation(
    fashion_mnist_dir: Path,
) -> None:
    rgb = Preprocessing(input_size=(3, 28, 28), interpolation="bilinear", crop_pct=1.0)
    data = open_dataset("fashion-mnist", preprocessing=rgb)
    task = load_task("image-classification")
    note = task.adaptation_note(data, rgb)
    assert note is not None and "1-channel" in note and "replicated to 3 channels" in note
    gray = Preprocessing(input_size=(1, 28, 28), interpolation="bilinear", crop_pct=1.0)
    assert task.adaptation_note(data, gray) is None
