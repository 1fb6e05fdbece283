"""Expectation over transformation (issue 37, item 3): `eot_samples` on PGD (L-inf, L2) and on
AutoAttack's APGD. EOT-PGD lowers accuracy on a randomized model where plain PGD is fooled by
the randomness; with one sample on a deterministic model it is plain PGD, bit for bit; L-inf
EOT is torchattacks' `EOTPGD` itself; EOT on a deterministic model is a warning, not an
error; a randomized model is pointed at the `eot` suite."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torchattacks
from torch import nn

import robench
from robench._core.errors import ConfigError
from robench.evaluation.suites import bundled_suites, load_suite
from robench.models.checks import EOT_SUITE, check_model
from robench.perturbations.adversarial.eot import EOTPGDL2
from robench.perturbations.adversarial.params import AutoAttackParams, PGDParams
from robench.perturbations.adversarial.torchattacks_attacks import PGD

ROOT = Path(__file__).resolve().parents[1]


class NoisyGradients(nn.Module):
    """A randomized linear classifier on 1x8x8 images, built here (outside robench).

    logits = W x + (A / w) r * sin(w U x), with r a fresh random sign per sample and class on
    every pass. The random term moves a logit by at most A / w = 0.01, so predictions barely
    change, but its gradient A r cos(w U x) U is ten times W's and random in sign: one pass's
    gradient mostly points at noise, while its expectation over r is W's. A = 0 is the
    deterministic model with the same W."""

    def __init__(self, amplitude: float = 10.0, frequency: float = 1000.0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.W = nn.Parameter(torch.randn(10, 64, generator=g) / 8)
        self.U = nn.Parameter(torch.randn(10, 64, generator=g) / 8)
        self.amplitude, self.frequency = amplitude, frequency

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1)  # (B, 64)
        logits = x @ self.W.T  # (B, 10)
        if self.amplitude == 0:
            return logits
        sign = torch.randint(0, 2, logits.shape, device=x.device).float() * 2 - 1
        wiggle = torch.sin(self.frequency * (x @ self.U.T))
        return logits + (self.amplitude / self.frequency) * sign * wiggle


def _data(model: nn.Module, n: int = 200) -> tuple[torch.Tensor, torch.Tensor]:
    """Uniform images labelled by the deterministic part of `model`: clean accuracy ~100%."""
    x = torch.rand(n, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return x, (x.flatten(1) @ model.W.T).argmax(dim=-1)


PAIRS = {  # attack -> (its entry without EOT, with EOT)
    "pgd-linf": {"kind": "pgd", "eps": 0.05, "steps": 20},
    "pgd-l2": {"kind": "pgd", "norm": "l2", "eps": 0.4, "steps": 20},
    "apgd-ce": {"kind": "autoattack", "eps": 0.05, "attacks": ["apgd-ce"], "n_iter": 20},
}


def _entries(eot: int) -> list[dict[str, object]]:
    plain = [{**entry, "name": name} for name, entry in PAIRS.items()]
    with_eot = [
        {**entry, "name": f"eot-{name}", "eot_samples": eot} for name, entry in PAIRS.items()
    ]
    return [{"kind": "clean"}, *plain, *with_eot]


def test_eot_lowers_accuracy_where_plain_attacks_are_fooled_by_the_randomness() -> None:
    randomized = NoisyGradients().eval()
    data = _data(randomized)
    report = robench.evaluate(randomized, _entries(20), data, batch_size=200, progress=False)
    assert any(f"-s {EOT_SUITE}" in warning for warning in report.warnings)
    deterministic = NoisyGradients(amplitude=0.0).eval()  # the same W, no randomness
    floor = robench.evaluate(deterministic, _entries(1), data, batch_size=200, progress=False)
    for name in PAIRS:
        plain = report.result(name).metrics["top1"]
        eot = report.result(f"eot-{name}").metrics["top1"]
        white_box = floor.result(name).metrics["top1"].value
        # Plain: fooled by the noise, far above what the attack does without it.
        assert plain.value > white_box + 0.1, (name, plain.value, white_box)
        # EOT: well below plain (beyond its interval), close to the deterministic number.
        assert eot.ci95[1] < plain.value, (name, eot, plain)
        assert eot.value < white_box + 0.06, (name, eot.value, white_box)
    assert report.result("eot-pgd-linf").params["eot_samples"] == 20
    assert report.result("eot-apgd-ce").params["eot_iter"] == 20  # autoattack's own name


@pytest.fixture(scope="module")
def fashion() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """The shipped baseline nano ViT (deterministic) and 16 Fashion-MNIST test images."""
    from robench.data import Preprocessing, open_dataset
    from robench.models.loading import load_model

    model = load_model("vit_nano_fmnist").model
    split = open_dataset("fashion-mnist", preprocessing=Preprocessing((1, 28, 28)))
    x = torch.from_numpy(split.images[:16]).unsqueeze(1).float() / 255.0
    return model, x, torch.tensor(split.targets[:16])


@pytest.mark.parametrize(("norm", "eps"), [("linf", 4 / 255), ("l2", 0.5)])
def test_one_eot_sample_on_a_deterministic_model_is_plain_pgd_bit_for_bit(
    fashion: tuple[nn.Module, torch.Tensor, torch.Tensor], norm: str, eps: float
) -> None:
    model, x, y = fashion
    plain = PGD(PGDParams(eps=eps, norm=norm, steps=5)).perturb(model, x, y, seed=7)
    eot = PGD(PGDParams(eps=eps, norm=norm, steps=5, eot_samples=1)).perturb(model, x, y, 7)
    assert torch.equal(plain, eot)
    assert not torch.equal(plain, x)  # it did attack


def test_eot_pgd_l2_with_one_sample_is_torchattacks_pgdl2(
    fashion: tuple[nn.Module, torch.Tensor, torch.Tensor],
) -> None:
    model, x, y = fashion
    torch.manual_seed(3)
    library = torchattacks.PGDL2(model, eps=0.5, alpha=0.1, steps=4)(x, y)
    torch.manual_seed(3)
    ours = EOTPGDL2(model, eps=0.5, alpha=0.1, steps=4, eot_iter=1)(x, y)
    assert torch.equal(library, ours)


def test_eot_pgd_on_a_randomized_model_is_torchattacks_eotpgd() -> None:
    """The peer as oracle: same model, inputs, labels, seed and parameters."""
    model = NoisyGradients().eval()
    x, y = _data(model, 32)
    ours = PGD(PGDParams(eps=0.05, steps=5, eot_samples=4)).perturb(model, x, y, seed=11)
    torch.manual_seed(11)
    theirs = torchattacks.EOTPGD(model, eps=0.05, alpha=0.0125, steps=5, eot_iter=4)(x, y)
    assert torch.equal(ours, theirs)


def test_eot_on_a_deterministic_model_warns_and_changes_nothing(
    fashion: tuple[nn.Module, torch.Tensor, torch.Tensor],
) -> None:
    model, x, y = fashion
    entries = [
        {"kind": "pgd", "name": "pgd", "eps": "4/255", "steps": 3},
        {"kind": "pgd", "name": "eot-pgd", "eps": "4/255", "steps": 3, "eot_samples": 3},
    ]
    report = robench.evaluate(model, entries, (x, y), progress=False)
    (warning,) = [w for w in report.warnings if "eot_samples on a deterministic model" in w]
    assert "eot-pgd (3)" in warning and "drop eot_samples" in warning
    # The same images: every pass gives the same gradient (signs of 3 g are those of g).
    predictions = report.samples["default"].values
    assert predictions["eot-pgd"]["prediction"] == predictions["pgd"]["prediction"]


def test_eot_samples_cost_and_names() -> None:
    plain, eot = PGDParams(eps=0.1, steps=10), PGDParams(eps=0.1, steps=10, eot_samples=20)
    assert eot.passes_per_sample() - 1 == 20 * (plain.passes_per_sample() - 1)
    assert PGDParams.display_name("pgd", {"steps": 10, "eot_samples": 20}) == "EOT-PGD-10"
    alias = AutoAttackParams.model_validate({"eps": 0.1, "attacks": ["apgd-ce"], "eot_samples": 5})
    assert alias.eot_iter == 5 and alias.gradient_samples() == 5
    # Reports of PGD without EOT keep their parameters as before EOT existed.
    smoke = load_suite("smoke").plan
    assert "eot_samples" not in next(p for p in smoke if p.kind == "pgd").report_params()


def test_a_randomized_model_is_pointed_at_the_shipped_eot_suite() -> None:
    assert EOT_SUITE in bundled_suites()
    suite = load_suite(EOT_SUITE)
    kinds = {
        (p.kind, getattr(p.params, "norm", None), p.params.gradient_samples()) for p in suite.plan
    }
    assert {("pgd", "linf", 20), ("pgd", "l2", 20), ("autoattack", "linf", 20)} <= kinds
    model = NoisyGradients().eval()
    x, y = _data(model, 8)
    found = check_model(model, x, y, gradients=False)
    assert found.randomized
    assert any(f"robench eval MODEL -s {EOT_SUITE}" in w for w in found.warnings)


def test_the_sanity_battery_names_the_eot_suite_for_a_randomized_model() -> None:
    model = NoisyGradients().eval()
    report = robench.evaluate(
        model,
        [{"kind": "clean"}],
        _data(model, 32),
        sanity=True,
        sanity_budget="quick",
        sanity_eps=0.05,
        progress=False,
    )
    checks = {r.name: r for r in report.sanity}
    assert checks["gradients_and_determinism"].values["randomized"] == 1.0
    assert f"-s {EOT_SUITE}" in checks["gradients_and_determinism"].detail
    # The battery's own EOT check (AutoAttack rand) beats its PGD and names the suite too.
    eot = checks["randomized_eot"]
    assert eot.values["eot"] < eot.values["pgd"] and f"-s {EOT_SUITE}" in eot.detail


def test_eot_is_refused_for_label_maps() -> None:
    model = nn.Conv2d(1, 3, 1)  # per-pixel logits of 3 classes
    images, maps = torch.rand(2, 1, 4, 4), torch.zeros(2, 4, 4, dtype=torch.long)
    attack = PGD(PGDParams(eps=0.1, steps=2, eot_samples=2))
    with pytest.raises(ConfigError, match="eot_samples applies to classification"):
        attack.perturb(model, images, maps, seed=0)
