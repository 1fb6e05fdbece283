"""The task layer, named datasets, report schema version 2 (and reading version 1), and the
model hooks the engine uses instead of importing model code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from PIL import Image

from robench._core.errors import ConfigError, DataError
from robench._core.model_hooks import adaptive_attack, report_sections, supports_adaptive_attack
from robench.cli._parsing import dataset_map
from robench.evaluation.request import EvalRequest, evaluate
from robench.evaluation.suites import load_suite
from robench.results.gate.regression import Status, run_gate
from robench.results.report.schema import SCHEMA_VERSION, read_report, write_report
from robench.results.stats import metrics as metrics_module
from robench.tasks import TASKS, load_task
from robench.tasks.base import records_of

ROOT = Path(__file__).resolve().parents[1]
V1_BASELINE = ROOT / "reports" / "baselines" / "vit_nano_elliptical_fmnist-smoke.json"


def test_image_classification_is_registered_and_scores_top_k() -> None:
    assert "image-classification" in TASKS
    task = load_task("image-classification")
    logits = torch.tensor([[0.1, 0.9, 0.0], [0.8, 0.1, 0.3]])
    model = torch.nn.Identity()
    columns = task.score(model, logits, torch.tensor([1, 2]))
    calibration = {name: columns.pop(name) for name in ("p_pred", "p_target", "logp_target")}
    p_sumsq = columns.pop("p_sumsq")
    assert columns == {"y": [1, 2], "topk": [[1, 0, 2], [0, 2, 1]]}  # k capped at 3 classes
    probs = logits.softmax(-1)
    assert calibration["p_pred"] == pytest.approx([float(probs[0, 1]), float(probs[1, 0])])
    assert calibration["p_target"] == pytest.approx([float(probs[0, 1]), float(probs[1, 2])])
    assert calibration["logp_target"] == pytest.approx(probs[[0, 1], [1, 2]].log().tolist())
    assert p_sumsq == pytest.approx((probs**2).sum(-1).tolist())
    columns.update(calibration, p_sumsq=p_sumsq)
    records = records_of(columns)
    assert [task.target(r) for r in records] == [1, 2]
    assert [task.outputs(r) for r in records] == [{"prediction": 1}, {"prediction": 0}]
    top1 = metrics_module.METRICS.get("top1").per_sample
    assert [top1(r) for r in records] == [True, False]


def test_version_1_reports_still_load_and_gate() -> None:
    raw = json.loads(V1_BASELINE.read_text())
    assert raw["schema_version"] == 1  # the committed CI baseline stays a version 1 report
    report = read_report(V1_BASELINE)
    assert report.schema_version == SCHEMA_VERSION == 5
    assert list(report.datasets) == ["default"] and report.data.n_samples == 1000
    assert report.model.extensions["elliptical"] == raw["model"]["elliptical"]
    for result in report.results:
        predictions = raw["samples"]["predictions"][result.name]
        labels = raw["samples"]["labels"][: len(predictions)]
        top1 = report.sample_values(result.name, "top1")
        assert top1 == [p == y for p, y in zip(predictions, labels, strict=True)]
        assert sum(top1) / len(top1) == pytest.approx(result.metrics["top1"].value)
        assert report.sample_values(result.name, "prediction") == predictions
    gate = run_gate(report, report)
    assert gate.status is Status.passed and len(gate.checks) == 6


def test_version_1_report_without_its_fields_is_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"schema_version": 1, "model": {}}))
    with pytest.raises(ConfigError, match="schema_version 1 but lacks"):
        read_report(path)


def test_unknown_task_and_metric_of_another_task_fail_at_load_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text(
        'name = "s"\nversion = 1\ntask = "image-clasification"\n[[perturbations]]\nkind = "clean"\n'
    )
    with pytest.raises(ConfigError, match="Did you mean 'image-classification'"):
        load_suite(str(suite))
    other = metrics_module.Metric(
        name="ppl",
        description="perplexity",
        higher_is_better=False,
        per_sample=lambda record: 0.0,
        display=metrics_module.MetricDisplay("PPL"),
        task="language-modeling",
    )
    monkeypatch.setattr(metrics_module, "METRICS", metrics_module.extended_registry(other))
    suite.write_text(
        'name = "s"\nversion = 1\nmetrics = ["top1", "ppl"]\n[[perturbations]]\nkind = "clean"\n'
    )
    with pytest.raises(ConfigError, match="'ppl' is for language-modeling models"):
        load_suite(str(suite))


def test_dataset_map_parses_named_datasets(tmp_path: Path) -> None:
    assert dataset_map(["fashion-mnist"]) == "fashion-mnist"
    assert dataset_map(["/data/in", "r=/data/imagenet-r"]) == {
        "default": "/data/in",
        "r": "/data/imagenet-r",
    }
    odd = tmp_path / "a=b"
    odd.mkdir()
    assert dataset_map([str(odd)]) == str(odd)  # an existing path is a path
    with pytest.raises(ConfigError, match="names dataset 'r' twice"):
        dataset_map(["r=/x", "r=/y"])


def _image_folder(root: Path, fmnist: tuple[torch.Tensor, torch.Tensor], n: int) -> Path:
    """The last `n` test images of each class of the fixture as ROOT/<class>/<image>.png."""
    images, labels = fmnist
    chosen = [i for c in range(10) for i in (labels == c).nonzero().flatten().tolist()[-n:]]
    for i in chosen:
        folder = root / f"{int(labels[i]):02d}"
        folder.mkdir(parents=True, exist_ok=True)
        pixels = (images[i, 0] * 255).round().to(torch.uint8).numpy()
        Image.fromarray(pixels, mode="L").save(folder / f"{i}.png")
    return root


@pytest.mark.slow
def test_a_suite_runs_entries_on_named_datasets(
    tmp_path: Path, fmnist_test: tuple[torch.Tensor, torch.Tensor]
) -> None:
    folder = _image_folder(tmp_path / "shift", fmnist_test, 3)
    suite = tmp_path / "two.toml"
    suite.write_text(
        'name = "two"\nversion = 1\n'
        '[[perturbations]]\nkind = "clean"\n'
        '[[perturbations]]\nkind = "clean"\nname = "clean-shift"\ndataset = "shift"\n'
        '[[perturbations]]\nkind = "fgsm"\nname = "fgsm-shift"\ndataset = "shift"\neps = "2/255"\n'
    )
    request = EvalRequest(
        suite=str(suite),
        data={"test": "fashion-mnist", "shift": str(folder)},
        out=tmp_path / "r.json",
        model="vit_nano_fmnist",
        limit=40,
        batch_size=16,
    )
    report = evaluate(request)
    assert list(report.datasets) == ["test", "shift"]
    assert report.datasets["test"].kind == "idx" and report.datasets["test"].n_samples == 40
    assert report.datasets["shift"].kind == "image-folder"
    assert report.datasets["shift"].n_total == report.datasets["shift"].n_samples == 30
    assert {r.name: r.dataset for r in report.results} == {
        "clean": "test",
        "clean-shift": "shift",
        "fgsm-shift": "shift",
    }
    shift = report.samples["shift"]
    assert shift.indices == list(range(30)) and set(shift.values) == {"clean-shift", "fgsm-shift"}
    labels = {int(p.parent.name) for p in folder.rglob("*.png")}
    assert set(shift.targets) <= labels
    top1 = report.sample_values("fgsm-shift", "top1")
    assert top1 is not None and len(top1) == 30
    assert sum(top1) / 30 == pytest.approx(report.result("fgsm-shift").metrics["top1"].value)
    reread = read_report(request.out)
    assert reread == report and run_gate(reread, report).status is Status.passed

    missing = EvalRequest(
        suite=str(suite), data="fashion-mnist", out=tmp_path / "m.json", model="vit_nano_fmnist"
    )
    with pytest.raises(ConfigError, match=r"runs on dataset 'shift'.*--data shift=PATH"):
        evaluate(missing)
    assert not (tmp_path / "m.json").exists()


def test_model_task_mismatch_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from robench.models import loading

    original = loading.load_model

    def as_language_model(*args: object, **kwargs: object) -> loading.LoadedModel:
        loaded = original(*args, **kwargs)  # type: ignore[arg-type]
        loaded.task, loaded.task_declared = "language-modeling", True
        return loaded

    monkeypatch.setattr("robench.evaluation.request.load_model", as_language_model)
    request = EvalRequest(
        suite="smoke", data="fashion-mnist", out=tmp_path / "r.json", model="vit_nano_fmnist"
    )
    with pytest.raises(ConfigError, match="suite is for image-classification models but"):
        evaluate(request)


def test_data_of_another_task_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from robench.data.idx_dataset import IdxDataset

    monkeypatch.setattr(IdxDataset, "task", "language-modeling")
    request = EvalRequest(
        suite="smoke", data="fashion-mnist", out=tmp_path / "r.json", model="vit_nano_fmnist"
    )
    with pytest.raises(DataError, match="is language-modeling data but the suite and model"):
        evaluate(request)


def test_elliptical_models_reach_the_engine_through_hooks() -> None:
    import timm

    import robench.models.zoo  # noqa: F401  (registers the models)
    from robench.models.layers import EllipticalAttention

    plain = timm.create_model("vit_nano_patch4_28", num_classes=10)
    assert not supports_adaptive_attack(plain) and report_sections(plain) == {}
    model = timm.create_model("vit_nano_elliptical_patch4_28", num_classes=10)
    layers = [m for m in model.modules() if isinstance(m, EllipticalAttention)]
    assert supports_adaptive_attack(model)
    section = report_sections(model)["elliptical"]
    assert section["layers"] == len(layers) - 1 and section["differentiable"] is False
    with adaptive_attack(model):
        assert all(layer.differentiable for layer in layers)
    assert not any(layer.differentiable for layer in layers)


# evaluate() and everything it and the runner call under evaluation/, plus the report and the
# gate. Not here: sanity/checks.py (the battery is for image classifiers: `Task.sanity_battery`)
# and suites.py (its `label` is a suite entry's result name, not a class label).
ENGINE = [
    "evaluation/request.py",
    "evaluation/datasets.py",
    "evaluation/fingerprint.py",
    "evaluation/report_assembly.py",
    "evaluation/sanity/battery.py",
    "evaluation/runner.py",
    "evaluation/jobs.py",
    "evaluation/store/sample_store.py",
    "evaluation/perturbed_samples.py",
    "evaluation/shared_samples.py",
    "evaluation/oom_fallback.py",
    "evaluation/interrupts.py",
    "evaluation/speed.py",
    "evaluation/environment.py",
    "evaluation/store/lock.py",
    "evaluation/transfer.py",
    "results/report/schema.py",
    "results/gate/regression.py",
]


@pytest.mark.parametrize("module", ENGINE)
def test_the_engine_has_no_task_or_norm_specific_code(module: str) -> None:
    """Labels, top-k and L-inf distances belong to the task and the threat-model table."""
    code = (ROOT / "robench" / module).read_text()
    code_only = "\n".join(line.split("#")[0] for line in code.splitlines())
    found = re.search(r"topk|amax|(?<![.\w])labels?\b|top5|top1", code_only.split('"""', 2)[-1])
    assert found is None, f"{module}: {found}"


@pytest.mark.parametrize("module", [m for m in ENGINE if m.startswith("evaluation/")])
def test_the_engine_leaves_task_decisions_to_the_task(module: str) -> None:
    """No task named, no image reader's type, no label-space or logit cutting of its own: a
    new task changes none of these modules."""
    code = (ROOT / "robench" / module).read_text()
    code_only = "\n".join(line.split("#")[0] for line in code.splitlines())
    forbidden = [
        *(f'"{name}"' for name in TASKS),
        "LabeledImages",
        "models.restricted",
        "label_space import",
    ]
    found = [word for word in forbidden if word in code_only]
    assert not found, f"{module}: {found}"


def test_written_reports_carry_the_current_schema(tmp_path: Path) -> None:
    report = read_report(V1_BASELINE)
    write_report(report, tmp_path / "v2.json")
    raw = json.loads((tmp_path / "v2.json").read_text())
    assert raw["schema_version"] == 5 and raw["task"] == "image-classification"
    assert "data" not in raw and set(raw["datasets"]) == {"default"}
    assert read_report(tmp_path / "v2.json") == report


def test_subset_restricts_the_default_dataset_before_limit(
    tmp_path: Path, fmnist_test: tuple[torch.Tensor, torch.Tensor]
) -> None:
    folder = _image_folder(tmp_path / "imgs", fmnist_test, 2)  # 20 images, 2 per class
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.png"))
    listed = tmp_path / "subset.txt"
    listed.write_text("# five of them\n" + "\n".join(names[::4]) + "\n")
    request = EvalRequest(
        suite="smoke",
        data=str(folder),
        out=tmp_path / "r.json",
        model="vit_nano_fmnist",
        subset=str(listed),
        limit=3,
    )
    report = evaluate(request)
    info = report.datasets["default"]
    assert info.subset == str(listed) and info.n_total == 20 and info.n_samples == 3
    chosen = report.samples["default"].indices
    assert len(chosen) == 3 and set(chosen) <= {names.index(n) for n in names[::4]}


def test_only_image_classification_cuts_logits_to_a_label_space() -> None:
    """The task decides how outputs are restricted: classification keeps the listed columns
    of the last axis in list order; other tasks score every output and refuse --classes."""
    net = torch.nn.Linear(4, 6)
    inputs = torch.rand(3, 4)
    classify = load_task("image-classification")
    cut = classify.restrict_outputs(net, (5, 0, 2))
    torch.testing.assert_close(cut(inputs), net(inputs)[:, [5, 0, 2]])
    assert classify.restrict_outputs(net, None) is net
    assert "argmax among them" in classify.label_space_protocol(3)
    for name in ("semantic-segmentation", "language-modeling"):
        task = load_task(name)
        assert task.restrict_outputs(net, None) is net
        with pytest.raises(ConfigError, match="cannot be scored on a subset"):
            task.restrict_outputs(net, (0, 1))
        with pytest.raises(ConfigError, match="drop --classes"):
            task.restrict_to_classes(object(), "imagenet-a")
