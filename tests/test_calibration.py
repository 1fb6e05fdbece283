"""Calibration under shift (issue 36, item 2): ECE, NLL and Brier from a classifier's records.

Oracles: ECE equals torchmetrics' `MulticlassCalibrationError(n_bins=15, norm="l1")`, NLL
equals `torch.nn.functional.cross_entropy` and the Brier score equals the direct multiclass
computation `((softmax - one_hot) ** 2).sum(-1).mean()`, on the same logits, within 1e-6:
on logits made here and through the real pipeline (`robench.evaluate` on the shipped nano
ViT, a timm model). Also: seeded bootstrap intervals, the paired bootstrap the gate uses,
and older reports without the columns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from robench.results.stats.calibration import CalibrationError
from robench.results.stats.metrics import METRICS
from robench.tasks.base import records_of
from robench.tasks.top_k_records import TopKRecords

torchmetrics = pytest.importorskip("torchmetrics")

ROOT = Path(__file__).resolve().parents[1]


class _Logits(torch.nn.Module):
    """A "model" returning the logits it is given as inputs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def records(logits: torch.Tensor, targets: torch.Tensor) -> list[dict[str, Any]]:
    return records_of(TopKRecords().score(_Logits(), logits, targets))


def reported(name: str, rows: list[dict[str, Any]]) -> float:
    return float(METRICS.get(name).summarize([METRICS.get(name).per_sample(r) for r in rows])[0])


def torch_references(logits: torch.Tensor, targets: torch.Tensor) -> dict[str, float]:
    """ECE by torchmetrics, NLL and the multiclass Brier score by torch, on the logits."""
    from torchmetrics.classification import MulticlassCalibrationError

    classes = logits.shape[-1]
    ece = MulticlassCalibrationError(num_classes=classes, n_bins=15, norm="l1")
    probs = logits.float().softmax(-1)
    one_hot = F.one_hot(targets, classes).float()
    return {
        "ece": float(ece(logits, targets)),
        "nll": float(F.cross_entropy(logits.float(), targets)),
        "brier": float(((probs - one_hot) ** 2).sum(-1).mean()),
    }


@pytest.mark.parametrize(
    ("n", "classes", "scale", "seed"),
    [(1000, 10, 3.0, 0), (257, 2, 1.0, 1), (2000, 100, 8.0, 2), (500, 10, 60.0, 3)],
)
def test_metrics_equal_torchmetrics_and_torch_on_the_same_logits(
    n: int, classes: int, scale: float, seed: int
) -> None:
    """Scale 60 saturates the float32 softmax: many confidences are exactly 1, which
    torchmetrics bins apart from [14/15, 1) (its 16th bin); robench must do the same."""
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, classes, generator=generator) * scale
    targets = torch.randint(0, classes, (n,), generator=generator)
    # Make the model right more often than chance, so the bins have both outcomes.
    right = torch.rand(n, generator=generator) < 0.6
    logits[right, targets[right]] += scale
    rows = records(logits, targets)
    if scale >= 60:
        assert sum(r["p_pred"] == 1.0 for r in rows) > 50
    expected = torch_references(logits, targets)
    for name, value in expected.items():
        assert reported(name, rows) == pytest.approx(value, abs=1e-6), name


def test_records_keep_the_four_calibration_scalars_of_each_sample() -> None:
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.0, 0.0, 5.0]])
    targets = torch.tensor([0, 1])
    first, second = records(logits, targets)
    probs = logits.softmax(-1)
    assert set(first) == {"y", "topk", "p_pred", "p_target", "logp_target", "p_sumsq"}
    assert first["p_pred"] == first["p_target"] == pytest.approx(float(probs[0, 0]))
    assert second["p_pred"] == pytest.approx(float(probs[1, 2]))
    assert second["p_target"] == pytest.approx(float(probs[1, 1]))
    assert second["logp_target"] == pytest.approx(float(logits[1].log_softmax(-1)[1]))
    assert second["p_sumsq"] == pytest.approx(float((probs[1] ** 2).sum()))


def test_nll_stays_finite_where_the_target_probability_underflows() -> None:
    logits = torch.tensor([[200.0, -200.0]])
    (row,) = records(logits, torch.tensor([1]))
    assert row["p_target"] == 0.0
    assert reported("nll", [row]) == pytest.approx(400.0)


def test_ece_of_hand_made_bins() -> None:
    """Two bins: [0.6, 2/3) with confidences 0.65 twice, one right (gap 0.15 x 2/4), and
    [0.9, 14/15) with 0.9 twice, both right (gap 0.1 x 2/4): ECE = 0.125."""
    pairs = [(0.65, 1.0), (0.65, 0.0), (0.9, 1.0), (0.9, 1.0)]
    assert CalibrationError()(pairs) == pytest.approx(0.125)
    assert np.isnan(CalibrationError()([]))


def test_a_confidence_of_exactly_one_has_its_own_bin_as_in_torchmetrics() -> None:
    """A wrong sample at confidence 1 and a right one at 0.95: in one bin the gaps would
    cancel (ECE 0.475); torchmetrics keeps 1.0 apart (0.525), and so does robench."""
    from torchmetrics.classification import MulticlassCalibrationError

    probs = torch.tensor([[1.0, 0.0], [0.95, 0.05]])
    targets = torch.tensor([1, 0])
    expected = float(
        MulticlassCalibrationError(num_classes=2, n_bins=15, norm="l1")(probs, targets)
    )
    assert expected == pytest.approx(0.525, abs=1e-6)
    assert CalibrationError()([(1.0, 0.0), (0.95, 1.0)]) == pytest.approx(expected, abs=1e-6)


def test_intervals_are_seeded_bootstraps_that_cover_the_value() -> None:
    rng = np.random.default_rng(0)
    confidence = rng.uniform(0.3, 1.0, 3000)
    correct = (rng.uniform(size=3000) < confidence * 0.9).astype(float)
    pairs = np.column_stack([confidence, correct])
    ece = METRICS.get("ece")
    value, interval = ece.summarize(pairs)
    assert interval == ece.summarize(pairs)[1]  # seeded: the same interval every time
    assert interval[0] <= value <= interval[1]
    assert 0 < interval[1] - interval[0] < 0.05
    losses = list(rng.exponential(0.5, 3000))
    value, (low, high) = METRICS.get("nll").summarize(losses)
    assert low < value < high and value == pytest.approx(np.mean(losses))
    # The bootstrap of a mean: its width is close to the normal approximation's.
    normal = 2 * 1.96 * np.std(losses, ddof=1) / np.sqrt(len(losses))
    assert high - low == pytest.approx(normal, rel=0.15)


def test_paired_bootstrap_finds_a_worse_calibrated_candidate() -> None:
    """The same samples and correctness, confidences pushed to 1: ECE rises, and the paired
    bootstrap says so; a candidate equal to the baseline shows no difference."""
    rng = np.random.default_rng(1)
    confidence = rng.uniform(0.3, 1.0, 2000)
    correct = (rng.uniform(size=2000) < confidence).astype(float)
    base = np.column_stack([confidence, correct])
    overconfident = np.column_stack([np.minimum(confidence + 0.2, 1.0), correct])
    ece = CalibrationError()
    diff, (low, _), p_value, _ = ece.paired(base, overconfident, 2000, 0, "greater")
    assert diff > 0.1 and low > 0 and p_value < 0.01
    diff, _, p_value, _ = ece.paired(base, base, 500, 0, "greater")
    assert diff == 0 and p_value == 1.0


def old_report(tmp_path: Path) -> Path:
    """The committed demo report of the nano baseline, written before calibration metrics."""
    source = ROOT / "reports" / "demo" / "baseline.json"
    data = json.loads(source.read_text())
    assert not any("ece" in r["metrics"] for r in data["results"])
    return source


def test_an_older_report_without_the_columns_loads_with_the_metrics_absent(
    tmp_path: Path,
) -> None:
    from robench.results.report.schema import read_report

    for path in (
        old_report(tmp_path),
        ROOT / "reports/baselines/vit_nano_elliptical_fmnist-smoke.json",
    ):
        report = read_report(path)
        assert report.results
        for result in report.results:
            assert not {"ece", "nll", "brier"} & set(result.metrics)
            assert report.sample_values(result.name, "ece") is None
        assert "ece" not in set(report.to_pandas()["metric"])


@pytest.fixture(scope="module")
def nano(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """`robench.evaluate` on the shipped nano ViT (a timm model) and 300 Fashion-MNIST test
    images as tensors, clean, under Gaussian noise (severity 3) and FGSM; with the logits
    computed here from the same images (the report's normalisation) and the labels."""
    import timm

    import robench
    import robench.models.zoo
    from robench.data import Preprocessing, open_dataset
    from robench.models.checkpoints import read_checkpoint

    model = timm.create_model("vit_nano_patch4_28")
    weights = read_checkpoint(ROOT / "models" / "vit_nano_fmnist.safetensors").state_dict
    model.load_state_dict(dict(weights))
    model.eval()
    test_split = open_dataset("fashion-mnist", preprocessing=Preprocessing((1, 28, 28)))
    x = torch.from_numpy(test_split.images[:300]).unsqueeze(1).float() / 255.0
    y = torch.tensor(test_split.targets[:300])
    suite = tmp_path_factory.mktemp("suite") / "s.toml"
    suite.write_text(
        'name = "calibration"\nversion = 1\n[[perturbations]]\nkind = "clean"\n'
        '[[perturbations]]\nkind = "corruption"\ncorruptions = ["gaussian_noise"]\n'
        'severities = [3]\n[[perturbations]]\nkind = "fgsm"\neps = "4/255"\n'
    )
    report = robench.evaluate(model, str(suite), (x, y), batch_size=64, progress=False)
    mean = torch.tensor(report.model.normalization["mean"]).view(1, -1, 1, 1)
    std = torch.tensor(report.model.normalization["std"]).view(1, -1, 1, 1)
    with torch.no_grad():
        logits = model((x - mean) / std)
    return report, logits, y


def test_report_of_a_timm_model_equals_torchmetrics_on_its_logits(
    nano: tuple[Any, torch.Tensor, torch.Tensor],
) -> None:
    """The real pipeline: the clean result's ECE, NLL and Brier equal torchmetrics and torch
    on the model's logits, and every result (clean, a corruption, an attack) reports all
    three."""
    report, logits, y = nano
    for result in report.results:
        assert {"ece", "nll", "brier"} <= set(result.metrics), result.name
    clean = report.result("clean")
    assert clean is not None
    assert report.sample_values("clean", "prediction") == logits.argmax(-1).tolist()
    for name, value in torch_references(logits, y).items():
        assert clean.metrics[name].value == pytest.approx(value, abs=1e-6), name
    for name in ("nll", "brier"):  # means: their bootstrap interval holds the value
        low, high = clean.metrics[name].ci95
        assert low < clean.metrics[name].value < high
    # The report's per-sample `ece` column: (confidence of the prediction, correct).
    pairs = np.asarray(report.sample_values("clean", "ece"))
    assert pairs[:, 0] == pytest.approx(logits.softmax(-1).amax(-1).numpy(), abs=1e-7)
    assert pairs[:, 1].tolist() == (logits.argmax(-1) == y).float().tolist()
    # Shift makes this model less sure and less right: NLL rises under the attack.
    fgsm = next(r for r in report.results if r.kind == "fgsm")
    assert fgsm.metrics["nll"].value > clean.metrics["nll"].value


# --- figures: reliability diagrams and the ECE heatmap ----------------------------------


def test_reliability_panels_per_perturbation_with_corruptions_pooled_per_severity(
    nano: tuple[Any, torch.Tensor, torch.Tensor],
) -> None:
    from robench.results.plots.reliability import reliability_figure, reliability_panels

    report = nano[0]
    panels = reliability_panels({"nano": report})
    names = [p.name for p in panels]
    assert names[0] == "clean" and names[1] == "corruptions, severity 3" and len(names) == 3
    clean = panels[0]
    bins = clean.bins("nano")
    assert sum(count for *_, count in bins) == 300
    pairs = np.asarray(report.sample_values("clean", "ece"))
    top = pairs[np.minimum((pairs[:, 0] * 15).astype(int), 14) == 14]
    if len(top):  # the last bin: its mean confidence and accuracy, recomputed
        assert bins[-1] == pytest.approx((top[:, 0].mean(), top[:, 1].mean(), len(top)))
    fig = reliability_figure({"a": report, "b": report})
    assert fig is not None
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    ece = 100 * report.result("clean").metrics["ece"].value
    assert titles[0] == f"clean\nECE % {ece:.1f} / {ece:.1f}"
    # Older reports have no per-sample ECE: no figure.
    assert reliability_figure({"old": without_calibration(report)}) is None


def test_heatmap_shows_ece_on_a_reversed_scale(
    nano: tuple[Any, torch.Tensor, torch.Tensor],
) -> None:
    from robench.results.compare.html.figures import heatmap_figures, reliability_figures
    from robench.results.plots.corruptions import corruption_heatmap_figure

    report = nano[0]
    fig = corruption_heatmap_figure({"nano": report}, metric="ece")
    assert fig is not None
    value = 100 * next(r for r in report.results if r.kind == "corruption").metrics["ece"].value
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert f"{value:.1f}" in texts
    image = fig.axes[0].images[0]
    assert image.cmap.name == "viridis_r"
    assert image.norm.vmin == 0 and image.norm.vmax == 10 * np.ceil(value / 10)
    assert "Calibration error" in fig.get_suptitle()
    # The page: an ECE heatmap beside the accuracy one and reliability diagrams, only when
    # the reports have ECE.
    assert len(heatmap_figures({"nano": report})) == 2
    assert len(reliability_figures({"nano": report})) == 1
    old = without_calibration(report)
    assert len(heatmap_figures({"old": old})) == 1 and reliability_figures({"old": old}) == []


# --- the gate: calibration regressions, and reports from before the metrics ----------------


@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`robench eval vit_nano_fmnist -s smoke` on 200 samples, through the command line."""
    from typer.testing import CliRunner

    from robench.cli import app

    out = tmp_path_factory.mktemp("smoke") / "r.json"
    args = ["eval", "vit_nano_fmnist", "-s", "smoke", "--limit", "200", "-b", "100"]
    result = CliRunner().invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def without_calibration(report: Any) -> Any:
    """The report as robench wrote it before the calibration metrics (no values, no columns)."""
    data = report.model_dump(mode="json")
    for result in data["results"]:
        result["metrics"] = {k: v for k, v in result["metrics"].items() if k in ("top1", "top5")}
    for samples in data["samples"].values():
        for columns in samples["values"].values():
            for name in ("ece", "nll", "brier"):
                columns.pop(name, None)
    return type(report).model_validate(data)


def overconfident(report: Any) -> Any:
    """The report with every wrong prediction made at confidence 1 (same predictions): its
    ECE recomputed from the per-sample column as `robench eval` computes it."""
    data = report.model_dump(mode="json")
    ece = METRICS.get("ece")
    for result in data["results"]:
        columns = data["samples"]["default"]["values"][result["name"]]
        columns["ece"] = [[c if k else 1.0, k] for c, k in columns["ece"]]
        value, ci95 = ece.summarize(columns["ece"])
        result["metrics"]["ece"].update(value=value, ci95=list(ci95))
    return type(report).model_validate(data)


def test_gate_pairs_ece_nll_and_brier_and_catches_a_calibration_regression(
    smoke_report: Path,
) -> None:
    from robench.results.gate.regression import Status, run_gate
    from robench.results.report.schema import read_report

    report = read_report(smoke_report)
    same = run_gate(report, report)
    tests = {(c.perturbation, c.metric): c.test for c in same.checks}
    for result in ("clean", "fgsm", "pgd-5"):
        for metric in ("ece", "nll", "brier"):
            test = tests[(result, metric)]
            assert test is not None and test.p_value == 1.0, (result, metric)
    assert "over samples" in tests[("clean", "ece")].name  # ECE's own paired bootstrap
    assert same.status is Status.passed
    worse = run_gate(report, overconfident(report))
    regressed = {(c.perturbation, c.metric) for c in worse.checks if c.status is Status.regressed}
    assert ("clean", "ece") in regressed
    assert not {m for _, m in regressed} - {"ece"}  # accuracy and the rest unchanged


def test_gate_between_an_older_report_and_a_new_one(smoke_report: Path) -> None:
    """An older baseline (no calibration) gates a new candidate on what it has; a new baseline
    gates an older candidate with a note that the calibration metrics were not gated."""
    from robench.results.gate.regression import Status, run_gate
    from robench.results.report.schema import read_report

    new = read_report(smoke_report)
    old = without_calibration(new)
    forward = run_gate(old, new)
    assert {c.metric for c in forward.checks} == {"top1", "top5"}
    assert forward.status is Status.passed
    backward = run_gate(new, old)
    assert {c.metric for c in backward.checks} == {"top1", "top5"}
    assert any("ece, nll, brier" in note for note in backward.notes)
    assert backward.status is Status.passed
