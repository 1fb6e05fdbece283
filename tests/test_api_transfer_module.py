"""`robench.evaluate(..., surrogate=module)`: a transfer attack's surrogate held in memory.

The shipped baseline nano ViT, given as an nn.Module, is the surrogate of the Elliptical one:
its results equal, per sample and bit for bit, those of the same surrogate given by name
(tests/test_transfer.py checks the named one against torchattacks). Its provenance says it was
held in memory; a module of other classes or another input size is refused with the sentence
a named one gets, before anything is written; the command line still takes a name only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch
from torch import nn

import robench
from robench.models.checkpoints import read_checkpoint
from robench.models.in_memory import state_dict_sha256
from robench.models.loading import load_model
from robench.results.report.schema import Report, report_json_schema

ROOT = Path(__file__).resolve().parents[1]
TARGET = "vit_nano_elliptical_fmnist"
SURROGATE = "vit_nano_fmnist"
LIMIT, BATCH = 16, 8
ENTRIES = [
    {"kind": "clean"},
    # Large budgets, so that the transfer images fool the target on some samples.
    {"kind": "fgsm", "name": "fgsm", "eps": "32/255"},
    {"kind": "pgd", "name": "pgd", "eps": "32/255", "steps": 3},  # random start: the seeds
]
ATTACKS = ("fgsm", "pgd")


def _evaluate(**options: Any) -> Report:
    return robench.evaluate(
        TARGET, ENTRIES, limit=LIMIT, batch_size=BATCH, seed=3, progress=False, **options
    )


@pytest.fixture(scope="module")
def by_name() -> Report:
    return _evaluate(surrogate=SURROGATE)


@pytest.fixture(scope="module")
def module() -> nn.Module:
    """The shipped baseline as robench loads it: a network on [0, 1] pixels."""
    return load_model(SURROGATE).model


@pytest.fixture(scope="module")
def in_memory(module: nn.Module) -> Report:
    return _evaluate(surrogate=module, surrogate_name="base-vit")


def _timm_network(num_classes: int = 10) -> nn.Module:
    """The baseline's architecture built by timm, with its shipped weights when they fit."""
    import timm

    import robench.models.zoo  # noqa: F401  (registers the architecture with timm)

    network = timm.create_model("vit_nano_patch4_28", num_classes=num_classes)
    if num_classes == 10:
        weights = read_checkpoint(ROOT / "models" / f"{SURROGATE}.safetensors").state_dict
        network.load_state_dict(dict(weights))
    return network.eval()


def _same_results(found: Report, expected: Report) -> None:
    samples, wanted = found.samples["default"], expected.samples["default"]
    assert samples.indices == wanted.indices
    for name in ATTACKS:
        assert samples.values[name] == wanted.values[name], name
        assert found.result(name).metrics == expected.result(name).metrics, name


def test_a_module_surrogate_gives_the_named_surrogates_results_bit_for_bit(
    by_name: Report, in_memory: Report
) -> None:
    _same_results(in_memory, by_name)
    # Not a vacuous equality: the transferred images fool the target on some samples, and
    # not on the same ones as the white-box attack.
    predictions = in_memory.samples["default"].values["pgd"]["prediction"]
    assert (
        in_memory.result("pgd").metrics["top1"].value
        < in_memory.result("clean").metrics["top1"].value
    )
    white_box = _evaluate()
    assert white_box.samples["default"].values["pgd"]["prediction"] != predictions


def test_params_surrogate_records_a_model_held_in_memory(
    module: nn.Module, in_memory: Report, tmp_path: Path
) -> None:
    for name in ATTACKS:
        info = in_memory.result(name).params["surrogate"]
        assert info["name"] == "base-vit"
        assert info["card"] is None and info["checkpoint"] is None
        assert info["source"]["source"] == "memory"
        assert info["source"]["model_name"] == "base-vit"
        assert info["checkpoint_sha256"] == state_dict_sha256(module)
        assert info["preprocessing"]["input_size"] == [1, 28, 28]
        assert info["randomized"] is False
    assert in_memory.result("clean").params.get("surrogate") is None  # no attack
    assert in_memory.model.name == TARGET  # the evaluated model is unchanged
    # The report, written and read back, validates against the published schema.
    in_memory.save(tmp_path / "r.json")
    jsonschema.validate(json.loads((tmp_path / "r.json").read_text()), report_json_schema())


def test_without_a_name_the_class_name_is_recorded(by_name: Report) -> None:
    network = _timm_network()
    report = _evaluate(
        surrogate=network,
        surrogate_preprocessing={"mean": [0.286], "std": [0.353], "size": (1, 28, 28)},
    )
    # A timm network normalised by surrogate_preprocessing= is the card's model too.
    _same_results(report, by_name)
    info = report.result("fgsm").params["surrogate"]
    assert info["name"] == "VisionTransformer"
    assert info["architecture"] == "timm.models.vision_transformer.VisionTransformer"
    assert info["normalization"] == {"mean": [0.286], "std": [0.353]}
    assert info["config_sources"]["mean"] == "surrogate_preprocessing="


def test_the_caller_surrogate_is_left_as_it_was() -> None:
    network = _timm_network().train()
    network.head.weight.requires_grad_(False)
    before = {k: v.clone() for k, v in network.state_dict().items()}
    _evaluate(surrogate=network, surrogate_preprocessing={"mean": [0.286], "std": [0.353]})
    assert network.training and not network.head.weight.requires_grad
    assert all(p.grad is None for p in network.parameters())
    after = network.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_an_entrys_own_surrogate_is_kept_and_the_module_applies_to_the_others(
    module: nn.Module,
) -> None:
    entries = [
        {"kind": "fgsm", "name": "own", "eps": "32/255", "surrogate": TARGET},
        {"kind": "fgsm", "name": "given", "eps": "32/255"},
    ]
    # Named as the entry's surrogate is, the module is still another surrogate than it.
    report = robench.evaluate(
        TARGET, entries, limit=4, surrogate=module, surrogate_name=TARGET, progress=False
    )
    # Crafted on the evaluated model itself, the entry would be the white-box attack.
    assert [m.name for m in report.missing] == ["own"]
    given = report.result("given").params["surrogate"]
    assert given["source"]["source"] == "memory" and given["name"] == TARGET


def test_the_evaluated_module_as_its_own_surrogate_is_the_white_box_attack() -> None:
    network = _timm_network()
    report = robench.evaluate(
        network,
        ENTRIES,
        limit=4,
        surrogate=network,
        preprocessing={"mean": [0.286], "std": [0.353]},
        surrogate_preprocessing={"mean": [0.286], "std": [0.353]},
        progress=False,
    )
    assert [m.name for m in report.missing] == list(ATTACKS)
    assert "is the evaluated model" in report.missing[0].reason


class _Flat(nn.Module):
    """A linear classifier on [0, 1] pixels of a fixed size."""

    def __init__(self, size: tuple[int, int, int], classes: int = 10) -> None:
        super().__init__()
        self.linear = nn.Linear(size[0] * size[1] * size[2], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))


@pytest.mark.parametrize(
    ("surrogate", "extra", "phrase"),
    [
        (lambda: _timm_network(num_classes=5), {}, "predicts 5 classes"),
        (lambda: _Flat((1, 28, 28), classes=3), {}, "predicts 3 classes"),
        (nn.Identity, {}, r"returns outputs of shape \(1, 28, 28\) per input"),
        (
            lambda: _Flat((3, 32, 32)),
            {"surrogate_preprocessing": {"size": (3, 32, 32)}},
            "takes inputs of size 3,32,32 but vit_nano_elliptical_fmnist takes 1,28,28",
        ),
        (lambda: _Flat((3, 32, 32)), {}, "cannot run on the evaluated model's inputs"),
        (lambda: _Flat((1, 28, 28)), {"surrogate_checkpoint": "w.pt"}, "held in memory"),
        (lambda: SURROGATE, {"surrogate_name": "x"}, "loaded by name"),
        (lambda: None, {"surrogate_preprocessing": {"size": (1, 28, 28)}}, "not given"),
        (lambda: 3, {}, r"surrogate=3 \(int\) is not what surrogate takes"),
    ],
)
def test_a_bad_surrogate_is_one_sentence_and_nothing_is_written(
    tmp_path: Path, surrogate: Any, extra: dict[str, Any], phrase: str
) -> None:
    with pytest.raises(robench.InputError, match=phrase) as caught:
        robench.evaluate(
            TARGET,
            ENTRIES,
            limit=4,
            surrogate=surrogate(),
            out=tmp_path / "r.json",
            progress=False,
            **extra,
        )
    assert caught.value.kind == "ConfigError"  # exit code 2 on the command line
    assert str(caught.value).count(". ") == 0 and "\n" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_an_engine_request_with_a_bare_module_is_refused(tmp_path: Path) -> None:
    request = robench.EvalRequest(
        suite=robench.load_suite("smoke"),
        data=None,
        out=tmp_path / "r.json",
        model=TARGET,
        surrogate=_Flat((1, 28, 28)),  # type: ignore[arg-type]
    )
    with pytest.raises(robench.InputError, match=r"pass the module to robench\.evaluate"):
        robench.evaluate(request)
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_takes_a_surrogate_name_only(tmp_path: Path, by_name: Report) -> None:
    from typer.testing import CliRunner

    from robench.cli import app
    from robench.cli._eval_options import _parsed_type
    from robench.evaluation.options import EVAL_OPTIONS

    assert _parsed_type(EVAL_OPTIONS["surrogate"]) is str  # text, never a model object
    suite = tmp_path / "transfer.toml"
    suite.write_text(
        'name = "transfer"\nversion = 1\n[[perturbations]]\nkind = "fgsm"\nname = "fgsm"\n'
        'eps = "32/255"\n'
    )
    out = tmp_path / "r.json"
    args = ["eval", TARGET, "-s", str(suite), "--surrogate", SURROGATE, "--limit", str(LIMIT)]
    args += ["--batch-size", str(BATCH), "--seed", "3", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = Report.model_validate_json(out.read_text())
    expected = by_name.samples["default"].values["fgsm"]
    assert report.samples["default"].values["fgsm"] == expected
    assert report.result("fgsm").params["surrogate"]["name"] == SURROGATE
