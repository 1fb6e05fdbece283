"""Corruptions and distribution shift through the evaluation: suite grids, per-sample seeding,
the unbounded check, pre-rendered ImageNet-C folders, label-space restriction (ImageNet-A/R)
and the CLI end to end with aggregates, compare and gate."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from typer.testing import CliRunner

from robench._core.errors import AttackCheckError, ConfigError
from robench.cli import app
from robench.data.imagenet_classes import imagenet_1k_wnids, read_wnid_list, shipped_label_spaces
from robench.evaluation.perturbed_samples import PerturbedSamples
from robench.evaluation.request import EvalRequest, evaluate
from robench.evaluation.suites import load_suite
from robench.models.restricted import restrict_outputs
from robench.perturbations import build_perturbation
from robench.perturbations.base import SamplePerturbation
from robench.perturbations.checks import check_pixel_values
from robench.results.report.schema import SCHEMA_VERSION, report_json_schema
from robench.tasks import load_task

SMOKE = ["gaussian_noise", "defocus_blur", "fog", "contrast"]


def _suite(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(f'name = "t"\nversion = 1\n{body}')
    return path


# --- suites ----------------------------------------------------------------------------


def test_a_grid_entry_expands_to_one_labelled_result_per_corruption_and_severity() -> None:
    plan = load_suite("imagenet-c").plan
    corruptions = [p for p in plan if p.kind == "corruption"]
    assert len(corruptions) == 75 and plan[0].kind == "clean"
    assert corruptions[0].label == "gaussian_noise-1"
    assert corruptions[-1].label == "jpeg_compression-5"
    pairs = [(p.params.corruption, p.params.severity) for p in corruptions]  # type: ignore[attr-defined]
    assert len(set(pairs)) == 75 and {s for _, s in pairs} == {1, 2, 3, 4, 5}
    params = corruptions[0].report_params()
    assert params["threat_model"] == "unbounded" and params["budget_display"] == "unbounded"
    extra = load_suite("imagenet-c-extra").plan
    assert [p.label for p in extra[::5]] == [
        "speckle_noise-1",
        "gaussian_blur-1",
        "spatter-1",
        "saturate-1",
    ]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('corruptions = ["gausian_noise"]', "Did you mean 'gaussian_noise'"),
        ('corruptions = "weathr"', "corruption set"),
        ('corruption = "fog"\nseverities = [1]', "not both"),
        ('corruption = "fog"\nseverity = 6', "severity"),
        ('corruptions = ["fog", "fog"]', "twice"),
        ("corruptions = []", "non-empty"),
    ],
)
def test_bad_corruption_entries_are_one_sentence_naming_the_problem(
    tmp_path: Path, entry: str, message: str
) -> None:
    path = _suite(tmp_path, f'[[perturbations]]\nkind = "corruption"\n{entry}\n')
    with pytest.raises(ConfigError, match=message):
        load_suite(str(path))


def test_two_grid_entries_with_the_same_labels_are_refused(tmp_path: Path) -> None:
    entry = '[[perturbations]]\nkind = "corruption"\ncorruptions = ["fog"]\nseverities = [1]\n'
    with pytest.raises(ConfigError, match="'fog-1'"):
        load_suite(str(_suite(tmp_path, entry * 2)))


def test_an_unknown_aggregate_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    path = _suite(tmp_path, 'aggregates = ["mcee"]\n[[perturbations]]\nkind = "clean"\n')
    with pytest.raises(ConfigError, match="'mce'"):
        load_suite(str(path))


# --- per-sample seeding ----------------------------------------------------------------


def _grey_images(n: int = 12, size: int = 28) -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    levels = torch.randint(0, 256, (n, 1, size, size), generator=generator)
    return TensorDataset(levels.float() / 255, torch.arange(n))


def _corrupted(dataset: TensorDataset, batch_size: int, workers: int) -> torch.Tensor:
    noise = build_perturbation("corruption", {"corruption": "shot_noise", "severity": 3})
    assert isinstance(noise, SamplePerturbation)
    view = PerturbedSamples(dataset, noise, seed=7, name="shot_noise-3")
    loader = DataLoader(view, batch_size=batch_size, num_workers=workers)
    return torch.cat([images for images, _ in loader])


def test_a_sample_is_corrupted_identically_whatever_the_batch_size_and_worker_count() -> None:
    dataset = _grey_images()
    reference = _corrupted(dataset, batch_size=12, workers=0)
    assert torch.equal(reference, _corrupted(dataset, batch_size=5, workers=0))
    assert torch.equal(reference, _corrupted(dataset, batch_size=4, workers=2))
    clean = torch.stack([dataset[i][0] for i in range(len(dataset))])
    assert reference.shape == clean.shape and not torch.equal(reference, clean)
    # Stored grey levels survive the round trip: every value is k / 255.
    assert torch.equal((reference * 255).round() / 255, reference)


def test_the_corruption_seed_depends_on_the_run_seed_and_the_sample_not_on_global_state() -> None:
    dataset = _grey_images(4)
    noise = build_perturbation("corruption", {"corruption": "gaussian_noise", "severity": 2})
    assert isinstance(noise, SamplePerturbation)
    a = PerturbedSamples(dataset, noise, seed=0, name="g")
    np.random.seed(123)
    first = a[1][0]
    np.random.seed(999)
    state = np.random.get_state()[1].copy()
    assert torch.equal(first, a[1][0])  # global numpy state does not matter...
    assert np.array_equal(state, np.random.get_state()[1])  # ...and is left untouched
    assert not torch.equal(a[0][0], a[1][0])
    other_run = PerturbedSamples(dataset, noise, seed=1, name="g")
    assert not torch.equal(first, other_run[1][0])


# --- the unbounded check ---------------------------------------------------------------


class _Broken(SamplePerturbation):
    def __init__(self, how: str) -> None:
        self.how = how

    @property
    def seed_key(self) -> str:
        return "broken"

    def perturb_sample(self, item: torch.Tensor, seed: int) -> torch.Tensor:
        return item[:, :-1] if self.how == "shape" else item + 2


def test_an_unbounded_perturbation_is_still_checked_for_shape_range_and_finiteness() -> None:
    dataset = _grey_images(2)
    with pytest.raises(AttackCheckError, match="keep each input's shape"):
        PerturbedSamples(dataset, _Broken("shape"), seed=0, name="b")[0]
    too_bright = PerturbedSamples(dataset, _Broken("range"), seed=0, name="b")[0][0]
    with pytest.raises(AttackCheckError, match=r"outside \[0, 1\]"):
        check_pixel_values(too_bright[None], name="b")
    with pytest.raises(AttackCheckError, match="non-finite"):
        check_pixel_values(torch.full((1, 1, 2, 2), float("nan")), name="b")


# --- label spaces (ImageNet-A/R) -------------------------------------------------------


def test_restricted_outputs_score_by_the_argmax_among_the_listed_classes() -> None:
    space = read_wnid_list(shipped_label_spaces()["imagenet-a"])
    index = {w: i for i, w in enumerate(imagenet_1k_wnids())}
    listed = [index[w] for w in space]
    outside = next(i for i in range(1000) if i not in set(listed))

    class Favourite(nn.Module):  # logits favour a class outside the 200, then listed class 3
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            logits = torch.zeros(x.shape[0], 1000)
            logits[:, outside] = 10.0
            logits[:, listed[3]] = 5.0
            return logits

    task = load_task("image-classification")
    images, targets = torch.zeros(2, 3, 8, 8), torch.tensor([3, 4])
    assert task.score(Favourite(), images, targets)["topk"][0][0] == outside
    scored = task.score(restrict_outputs(Favourite(), listed), images, targets)
    assert [row[0] for row in scored["topk"]] == [3, 3]  # 200-way argmax: right, then wrong


def _write_image(path: Path, size: int = 32, value: int = 128) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(value)
    pixels = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)


def _imagenet_eval(tmp_path: Path, suite: str, data: dict[str, str] | str, **kw: object):
    return evaluate(
        EvalRequest(
            suite=suite,
            data=data,
            out=tmp_path / "report.json",
            model="vit_nano_patch4_28",
            overrides=_thousand_classes(),
            allow_random_weights=True,
            batch_size=8,
            **kw,  # type: ignore[arg-type]
        )
    )


def _thousand_classes():
    from robench.models.spec import ModelSpec

    return ModelSpec(num_classes=1000)  # grey 28x28 input: the RGB images are converted


@pytest.mark.slow
def test_an_imagenet_a_folder_with_an_unknown_wnid_is_refused_from_the_cli(tmp_path: Path) -> None:
    wnids = read_wnid_list(shipped_label_spaces()["imagenet-a"])
    for wnid in [*wnids[:199], "n99999999"]:
        _write_image(tmp_path / "a" / wnid / "x.png", size=8)
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "vit_nano_patch4_28",
            "--num-classes",
            "1000",
            "--allow-random-weights",
            "-s",
            "imagenet-a",
            "--data",
            str(tmp_path / "a"),
            "-o",
            str(tmp_path / "r.json"),
        ],
    )
    assert result.exit_code == 2, result.output
    assert "n99999999" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "r.json").exists()


# --- pre-rendered ImageNet-C and optional datasets -------------------------------------


@pytest.mark.slow
def test_a_pre_rendered_imagenet_c_folder_evaluates_what_is_present_and_names_the_rest(
    tmp_path: Path,
) -> None:
    wnids = imagenet_1k_wnids()[:2]
    for corruption in ("fog", "contrast"):
        for severity in (1, 2):
            for k, wnid in enumerate(wnids):
                for j in range(2):
                    _write_image(
                        tmp_path / "c" / corruption / str(severity) / wnid / f"{j}.png",
                        size=32,
                        value=severity * 10 + k * 2 + j,
                    )
    for k, wnid in enumerate(wnids):
        for j in range(2):
            _write_image(tmp_path / "val" / wnid / f"{j}.png", size=32, value=k * 2 + j)
    report = _imagenet_eval(
        tmp_path, "imagenet-c", {"default": str(tmp_path / "c"), "clean": str(tmp_path / "val")}
    )
    present = {r.name: r for r in report.results}
    assert set(present) == {"clean", "fog-1", "fog-2", "contrast-1", "contrast-2"}
    assert present["fog-1"].params["source"] == "rendered" and present["fog-1"].dataset == "default"
    assert "implementation" not in present["fog-1"].params
    assert present["clean"].dataset == "clean"
    assert len(report.missing) == 75 - 4
    assert any("gaussian_noise at severity 1" in m.reason for m in report.missing)
    assert report.datasets["default"].kind == "imagenet-c"
    assert "without resizing" in (report.datasets["default"].preprocessing_note or "")
    mce = report.aggregate("mce")
    assert mce is not None and mce.value is None and "missing" in (mce.reason or "")
    jsonschema.validate(json.loads((tmp_path / "report.json").read_text()), report_json_schema())


@pytest.mark.slow
def test_datasets_a_suite_declares_optional_are_listed_as_missing_when_not_given(
    tmp_path: Path,
) -> None:
    wnids = read_wnid_list(shipped_label_spaces()["imagenet-r"])
    for k, wnid in enumerate(wnids):
        _write_image(tmp_path / "r" / wnid / "x.png", size=8, value=k)
    report = _imagenet_eval(tmp_path, "imagenet-shift", {"r": str(tmp_path / "r")})
    assert [r.name for r in report.results] == ["imagenet-r"]
    r = report.datasets["r"]
    assert r.classes == 200 and r.label_space is not None and r.label_space.name == "imagenet-r"
    assert report.results[0].n_samples == 200
    missing = {m.name: m.reason for m in report.missing}
    assert "--data a=PATH" in missing["imagenet-a"] and "--data val=PATH" in missing["val-200a"]
    assert len(missing) == 6 + 75


# --- the CLI end to end ----------------------------------------------------------------


@pytest.mark.slow
def test_a_corruption_suite_from_the_cli_writes_aggregates_that_compare_and_gate_read(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    outs = []
    for model in ("vit_nano_fmnist", "vit_nano_elliptical_fmnist"):
        out = tmp_path / f"{model}.json"
        args = ["eval", model, "-s", "corruptions-smoke", "--limit", "48", "-b", "24"]
        result = runner.invoke(app, [*args, "--workers", "1", "-o", str(out)])
        assert result.exit_code == 0, result.output
        outs.append(out)
    raw = json.loads(outs[0].read_text())
    jsonschema.validate(raw, report_json_schema())
    assert raw["schema_version"] == SCHEMA_VERSION
    names = [r["name"] for r in raw["results"]]
    assert names == ["clean"] + [f"{c}-{s}" for c in SMOKE for s in (1, 3, 5)]
    corruption = raw["results"][1]
    assert corruption["params"]["source"] == "on-the-fly"
    assert corruption["params"]["threat_model"] == "unbounded"
    accuracy = next(a for a in raw["aggregates"] if a["name"] == "mean_corruption_accuracy")
    tops = [r["metrics"]["top1"]["value"] for r in raw["results"][1:]]
    assert accuracy["value"] == pytest.approx(sum(tops) / len(tops))
    low, high = accuracy["ci95"]
    assert low <= accuracy["value"] <= high
    assert all(a["name"] != "mce" for a in raw["aggregates"])  # not ImageNet: no AlexNet units

    compared = runner.invoke(app, ["compare", *map(str, outs), "--format", "markdown"])
    assert compared.exit_code == 0, compared.output
    assert "fog-3" in compared.stdout and "mean" in compared.stdout.lower()
    gated = runner.invoke(app, ["gate", "--baseline", str(outs[0]), "--candidate", str(outs[0])])
    assert gated.exit_code == 0, gated.output
