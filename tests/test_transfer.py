"""Transfer attacks (issue 37, item 2): the attack runs on a surrogate, the evaluated model
scores its images. Checked against a direct computation (torchattacks on the surrogate, then
a forward pass of the target), paired with the white-box results in `gate`, with the
surrogate's provenance in the report; bad surrogates are refused before anything is written
(the command-line cases are rows of docs/errors.md, tests/test_error_catalogue.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from torch import nn

import robench
from robench.data import Preprocessing, open_dataset
from robench.models.checkpoints import read_checkpoint
from robench.models.loading import load_model
from robench.results.report.schema import Report

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
BATCH = 16
N = 32  # two whole batches, in index order: the run's batches are the direct loop's

ENTRIES = [
    {"kind": "clean"},
    {"kind": "fgsm", "name": "fgsm", "eps": "8/255"},
    # No random start: the direct computation needs no access to the run's seeds.
    {"kind": "pgd", "name": "pgd", "eps": "8/255", "steps": 3, "random_start": False},
]


class _Pixels(nn.Module):
    """A classifier on [0, 1] pixels, normalisation inside: built here, outside robench."""

    def __init__(self, network: nn.Module, mean: float, std: float) -> None:
        super().__init__()
        self.network, self.mean, self.std = network, mean, std

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network((x - self.mean) / self.std)


@pytest.fixture(scope="module")
def target() -> nn.Module:
    """The Elliptical nano ViT built by timm in memory from its shipped weights."""
    import timm

    import robench.models.zoo  # noqa: F401  (registers the architecture with timm)

    network = timm.create_model("vit_nano_elliptical_patch4_28")
    weights = read_checkpoint(MODELS / "vit_nano_elliptical_fmnist.safetensors").state_dict
    network.load_state_dict(dict(weights))
    return _Pixels(network, 0.2860, 0.3530).eval()


@pytest.fixture(scope="module")
def data() -> tuple[torch.Tensor, torch.Tensor]:
    """The first N Fashion-MNIST test images as tensors (x in [0, 1], y)."""
    test_split = open_dataset("fashion-mnist", preprocessing=Preprocessing((1, 28, 28)))
    x = torch.from_numpy(test_split.images[:N]).unsqueeze(1).float() / 255.0
    return x, torch.tensor(test_split.targets[:N])


def _direct(
    attack_name: str, attacked: nn.Module, target: nn.Module, x: torch.Tensor, y: torch.Tensor
) -> list[int]:
    """torchattacks on `attacked`, batch by batch, then `target`'s prediction per sample."""
    import torchattacks

    attacks = {
        "fgsm": lambda m: torchattacks.FGSM(m, eps=8 / 255),
        "pgd": lambda m: torchattacks.PGD(
            m, eps=8 / 255, alpha=2 / 255, steps=3, random_start=False
        ),
    }
    predictions: list[int] = []
    for start in range(0, len(x), BATCH):
        attack = attacks[attack_name](attacked)
        adv = attack(x[start : start + BATCH], y[start : start + BATCH])
        with torch.no_grad():
            predictions += target(adv).argmax(dim=-1).tolist()
    return predictions


@pytest.fixture(scope="module")
def transfer(target: nn.Module, data: tuple[torch.Tensor, torch.Tensor]) -> Report:
    """The entries crafted on the baseline nano ViT (by name), scored on `target`."""
    return robench.evaluate(
        target, ENTRIES, data, batch_size=BATCH, surrogate="vit_nano_fmnist", progress=False
    )


def test_target_predictions_equal_a_forward_pass_on_the_surrogates_images(
    target: nn.Module, data: tuple[torch.Tensor, torch.Tensor], transfer: Report
) -> None:
    x, y = data
    report = transfer
    surrogate = load_model("vit_nano_fmnist").model
    samples = report.samples["default"]
    assert samples.indices == list(range(N))
    for name in ("fgsm", "pgd"):
        expected = _direct(name, surrogate, target, x, y)
        assert samples.values[name]["prediction"] == expected, name
        correct = [int(p == t) for p, t in zip(expected, y.tolist(), strict=True)]
        assert report.result(name).metrics["top1"].value == pytest.approx(sum(correct) / N)
        # What the attack found per sample on the surrogate is not the target's: left out.
        assert "first_success" not in samples.values[name]
    # Not the white-box images: the target's own attack fools it on other samples.
    white_box = _direct("pgd", target, target, x, y)
    assert samples.values["pgd"]["prediction"] != white_box
    assert report.result("clean").params.get("surrogate") is None  # no attack, no surrogate


def test_transfer_results_pair_with_the_white_box_ones_in_gate(
    target: nn.Module, data: tuple[torch.Tensor, torch.Tensor], transfer: Report
) -> None:
    white_box = robench.evaluate(target, ENTRIES, data, batch_size=BATCH, progress=False)
    assert white_box.samples["default"].indices == transfer.samples["default"].indices
    for name in ("fgsm", "pgd"):  # a transfer attack is weaker than the white-box one
        assert (
            transfer.result(name).metrics["top1"].value
            > white_box.result(name).metrics["top1"].value
        )
    outcome = robench.gate(white_box, transfer)
    checked = set(outcome.checks["perturbation"])
    assert checked == {"clean", "fgsm", "pgd"}
    tests = outcome.checks.set_index(["perturbation", "metric"])["test"]
    assert "McNemar" in tests[("pgd", "top1")]  # paired per sample
    assert outcome.passed  # the candidate (transfer) is the more accurate one
    assert not robench.gate(transfer, white_box).passed  # and white-box is worse, per sample


def test_the_report_records_the_surrogates_provenance(tmp_path: Path) -> None:
    """A suite entry's own surrogate (weights given relative to the suite file) is kept when
    --surrogate names another for the rest; each records where its weights came from."""
    shutil.copy(MODELS / "vit_nano_fmnist.safetensors", tmp_path / "base.safetensors")
    suite = tmp_path / "transfer.toml"
    suite.write_text(
        'name = "t"\nversion = 1\n'
        '[[perturbations]]\nkind = "fgsm"\nname = "from-base"\neps = "4/255"\n'
        'surrogate = "vit_nano_patch4_28"\nsurrogate_checkpoint = "base.safetensors"\n'
        '[[perturbations]]\nkind = "fgsm"\nname = "from-option"\neps = "4/255"\n'
        '[[perturbations]]\nkind = "fgsm"\nname = "from-itself"\neps = "4/255"\n'
        'surrogate = "vit_nano_elliptical_fmnist"\n'
    )
    report = robench.evaluate(
        "vit_nano_elliptical_fmnist",
        str(suite),
        limit=8,
        surrogate="vit_nano_fmnist",
        out=tmp_path / "r.json",
        progress=False,
    )
    own = report.result("from-base").params["surrogate"]
    assert own["architecture"] == "vit_nano_patch4_28"
    assert Path(own["checkpoint"]) == (tmp_path / "base.safetensors").resolve()
    card_sha = read_checkpoint(MODELS / "vit_nano_fmnist.safetensors").sha256
    assert own["checkpoint_sha256"] == card_sha
    assert own["preprocessing"]["input_size"] == [1, 28, 28]
    given = report.result("from-option").params["surrogate"]
    assert given["name"] == "vit_nano_fmnist"
    assert given["card"].endswith("vit_nano_fmnist.toml")
    assert given["checkpoint_sha256"] == card_sha and given["randomized"] is False
    # Crafted on the evaluated model itself, it would be the white-box attack: not run.
    (itself,) = report.missing
    assert itself.name == "from-itself" and "is the evaluated model" in itself.reason
    assert report.result("from-itself") is None
    # Resuming with another surrogate would mix two runs' records: refused.
    with pytest.raises(robench.InputError, match="surrogates"):
        robench.evaluate(
            "vit_nano_elliptical_fmnist",
            str(suite),
            limit=8,
            surrogate="vit_nano_elliptical_fmnist",
            out=tmp_path / "r.json",
            resume=True,
            progress=False,
        )


@pytest.mark.parametrize(
    ("surrogate", "phrase"),
    [
        ("resnet18", "input size"),  # 3x224x224 for a 1x28x28 model
        ("segmenter_nano_baseline_scenes", "input size"),  # 3x64x64, 11 classes
    ],
)
def test_a_surrogate_of_another_shape_is_refused_before_anything_is_written(
    tmp_path: Path, surrogate: str, phrase: str
) -> None:
    with pytest.raises(robench.InputError, match=phrase) as caught:
        robench.evaluate(
            "vit_nano_fmnist",
            ENTRIES,
            limit=8,
            surrogate=surrogate,
            allow_random_weights=True,
            out=tmp_path / "r.json",
            progress=False,
        )
    assert str(caught.value).count(". ") == 0  # one sentence
    assert list(tmp_path.iterdir()) == []
