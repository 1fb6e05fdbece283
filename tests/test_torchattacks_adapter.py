"""The `torchattacks.NAME` kinds (issue 37, item 1): the source reading agrees with the imported
library, every exported attack has a threat model or a reason, every runnable one keeps the
perturbation contract (inside its threat model, deterministic under a seed, the model and the
caller's RNGs untouched), minimal-norm attacks record norms that curves and `compare
--at-eps` read, targeted modes record their targets, L0 and L1 behave as threat models, and
bad input is one sentence with exit code 2. Bit-for-bit parity: test_torchattacks_parity.py.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torchattacks
from pydantic import ValidationError
from torch import nn
from typer.testing import CliRunner

import robench
from robench._core.errors import AttackCheckError, ConfigError
from robench.cli import app
from robench.perturbations import PERTURBATIONS, build_perturbation
from robench.perturbations.adversarial.torchattacks_catalogue import (
    REFUSED,
    THREATS,
    Bounded,
    MinimalNorm,
)
from robench.perturbations.adversarial.torchattacks_source import Unreadable, library_attacks
from robench.perturbations.checks import check_adversarial
from robench.perturbations.threat_models import NORMS
from robench.results.report.schema import Report
from robench.results.stats.robustness_curves import accuracy_at_results, eps_curve
from tests.torchattacks_cases import SEED, SMALL, tiny_batch, tiny_model

RUNNABLE = [name for name in torchattacks.__all__ if name not in REFUSED]


@pytest.fixture(scope="module", autouse=True)
def _one_intra_op_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --- the catalogue ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", torchattacks.__all__)
def test_source_reading_equals_the_imported_signature(name: str) -> None:
    """What robench reads with `ast` (for list/validate without torch) is what
    inspect.signature of the imported class says: names, order and literal defaults."""
    read = library_attacks()[name]
    assert read is not None
    live = [
        p
        for p in inspect.signature(getattr(torchattacks, name).__init__).parameters.values()
        if p.name not in ("self", "model")
    ]
    assert [p.name for p in read.parameters] == [p.name for p in live]
    for ours, theirs in zip(read.parameters, live, strict=True):
        if not isinstance(ours.default, Unreadable):
            assert ours.default == theirs.default, (name, ours.name)


def test_every_exported_attack_has_a_threat_model_or_a_reason() -> None:
    assert set(torchattacks.__all__) <= set(THREATS) | set(REFUSED)
    assert not set(THREATS) & set(REFUSED)
    assert set(THREATS) <= set(torchattacks.__all__), "a row for a class torchattacks lacks"
    for threat in THREATS.values():
        norms = threat.norms if isinstance(threat, Bounded) else ()
        norms += (threat.norm,) if isinstance(threat, MinimalNorm) else ()
        assert set(norms) <= set(NORMS)


def test_issue_threat_models() -> None:
    """The issue's list: CW, DeepFool, EAD and SparseFool/JSMA are minimal-norm; OnePixel,
    Pixle, SparseFool, JSMA are L0; EADL1 is L1."""
    for name in ("CW", "DeepFool", "EADEN", "EADL1", "SparseFool", "JSMA"):
        assert isinstance(THREATS[name], MinimalNorm), name
    for name in ("OnePixel", "Pixle", "SparseFool", "JSMA"):
        threat = THREATS[name]
        assert (threat.norms if isinstance(threat, Bounded) else (threat.norm,)) == ("l0",)  # type: ignore[union-attr]
    assert THREATS["EADL1"] == MinimalNorm("l1")


def test_every_torchattacks_kind_is_listed_with_parameters_and_threat_model() -> None:
    result = CliRunner().invoke(app, ["list", "perturbations", "torchattacks.*"])
    assert result.exit_code == 0, result.output
    rows = dict(line.split("\t", 1) for line in result.output.strip().splitlines())
    assert set(rows) == {f"torchattacks.{n}" for n in torchattacks.__all__}
    assert rows["torchattacks.CW"].startswith("c=1, kappa=0, steps=50, lr=0.01, targeted=None")
    assert "minimal-norm L2" in rows["torchattacks.CW"]
    assert "bounded L0" in rows["torchattacks.OnePixel"]
    assert "bounded Linf, L2" in rows["torchattacks.FAB"] and "L1" not in rows["torchattacks.FAB"]
    assert "minimal-norm L1" in rows["torchattacks.EADL1"]
    assert (
        "not available: it runs a list of other attack objects" in rows["torchattacks.MultiAttack"]
    )


# --- the perturbation contract over every runnable attack --------------------------------------


def _rng_states() -> tuple[torch.Tensor, Any]:
    return torch.get_rng_state(), np.random.get_state()[1].copy()


@pytest.mark.parametrize("name", RUNNABLE)
def test_contract(name: str) -> None:
    model = tiny_model().train()  # train mode: the attack runs in eval, the mode comes back
    images, labels = tiny_batch(model.eval())
    model.train()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    perturbation = build_perturbation(f"torchattacks.{name}", SMALL.get(name, {}))
    before = _rng_states()
    first, columns = perturbation.perturb_with_columns(model, images, labels, SEED)
    after = _rng_states()
    again, columns_again = perturbation.perturb_with_columns(model, images, labels, SEED)
    assert torch.equal(first, again) and columns == columns_again  # same seed, same result
    assert torch.equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    assert model.training and all(p.requires_grad for p in model.parameters())
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in weights.items())
    check_adversarial(images, first, perturbation.eps, name=name, threat=perturbation.threat_model)
    threat = THREATS[name]
    if isinstance(threat, MinimalNorm):
        _check_minimal_norms(model.eval(), images, first, labels, columns["min_norm"], threat.norm)


def _check_minimal_norms(
    model: nn.Module,
    clean: torch.Tensor,
    adv: torch.Tensor,
    labels: torch.Tensor,
    norms: list[float | None],
    norm: str,
) -> None:
    """None exactly where the output is still correct; else its distance in the norm."""
    with torch.no_grad():
        wrong = (model(adv).argmax(dim=1) != labels).tolist()
    distances = NORMS[norm].distance((adv - clean).double()).tolist()
    for found, fooled, distance in zip(norms, wrong, distances, strict=True):
        assert (found is None) == (not fooled)
        if found is not None:
            assert found == pytest.approx(distance)


def test_a_zero_budget_returns_the_images() -> None:
    model = tiny_model()
    images, labels = tiny_batch(model)
    adv = build_perturbation("torchattacks.PGDL2", {"eps": 0}).perturb(model, images, labels, 0)
    assert torch.equal(adv, images)


def test_seed_changes_a_random_start() -> None:
    model = tiny_model()
    images, labels = tiny_batch(model)
    pgd = build_perturbation("torchattacks.PGD", SMALL["PGD"])
    assert not torch.equal(
        pgd.perturb(model, images, labels, 1), pgd.perturb(model, images, labels, 2)
    )


def test_targeted_least_likely_records_the_least_likely_class() -> None:
    model = tiny_model()
    images, labels = tiny_batch(model)
    attack = build_perturbation("torchattacks.PGD", {**SMALL["PGD"], "targeted": "least-likely"})
    _, columns = attack.perturb_with_columns(model, images, labels, 0)
    with torch.no_grad():
        least = model(images).argmin(dim=1).tolist()
    assert columns["target_class"] == least


def test_library_defaults_stay_unset_and_robench_fills_seed_and_classes() -> None:
    params = PERTURBATIONS.get("torchattacks.Square").Params.model_validate({"eps": "4/255"})
    assert params.library_kwargs() == {"eps": 4 / 255, "norm": "Linf"}  # type: ignore[attr-defined]
    cw = PERTURBATIONS.get("torchattacks.CW").Params.model_validate({"c": 0.5})
    assert cw.library_kwargs() == {"c": 0.5}  # type: ignore[attr-defined]
    pixels = PERTURBATIONS.get("torchattacks.OnePixel").Params.model_validate({"pixels": 3})
    assert pixels.library_kwargs() == {"pixels": 3}  # type: ignore[attr-defined]


# --- L0 and L1 ----------------------------------------------------------------------------------


def _l1_reference(diff: torch.Tensor, eps: float) -> torch.Tensor:
    """Projection onto the L1 ball by bisection on the soft threshold."""
    low, high = 0.0, float(diff.abs().max())
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if (diff.abs() - mid).clamp_min(0).sum() > eps else (low, mid)
    return diff.sign() * (diff.abs() - high).clamp_min(0)


def test_l1_projection_is_the_euclidean_projection_and_keeps_samples_inside() -> None:
    generator = torch.Generator().manual_seed(0)
    clean = torch.rand(5, 3, 6, 6, generator=generator, dtype=torch.float64)
    adv = clean + 0.2 * torch.randn(clean.shape, generator=generator, dtype=torch.float64)
    l1 = NORMS["l1"]
    projected = l1.project(adv, clean, 3.0)
    for i in range(5):
        expected = clean[i] + _l1_reference(adv[i] - clean[i], 3.0)
        assert torch.allclose(projected[i], expected, atol=1e-9)
    assert torch.equal(l1.project(adv, clean, 1e3), adv)


def test_l0_counts_changed_pixels_and_projects_to_the_largest_changes() -> None:
    clean = torch.zeros(1, 3, 4, 4)
    adv = clean.clone()
    adv[0, 0, 0, 0] = 0.9  # one pixel, one channel
    adv[0, :, 1, 1] = 0.5  # one pixel, every channel
    adv[0, 2, 3, 3] = 0.1
    l0 = NORMS["l0"]
    assert l0.distance(adv - clean).tolist() == [3.0]
    kept = l0.project(adv, clean, 2)
    assert l0.distance(kept - clean).tolist() == [2.0]
    assert kept[0, 2, 3, 3] == 0 and torch.equal(kept[0, :, 1, 1], adv[0, :, 1, 1])
    check_adversarial(clean, adv, 3, name="x", threat=l0)
    with pytest.raises(AttackCheckError, match="L0 eps-ball in 1 of 1 samples"):
        check_adversarial(clean, adv, 2, name="x", threat=l0)


def test_an_l0_budget_must_be_whole() -> None:
    with pytest.raises(ValidationError, match=r"must be a whole number, got 2\.5; write eps = 2"):
        build_perturbation("torchattacks.OnePixel", {"eps": 2.5})


# --- bad input: one sentence, exit code 2, nothing written --------------------------------------

BAD_ENTRIES = {
    "unknown-attack": ('kind = "torchattacks.CWW"', "Did you mean 'torchattacks.CW'"),
    "unknown-parameter": (
        'kind = "torchattacks.PGD"\nstepz = 3',
        "unknown key 'stepz' (did you mean 'steps'?); torchattacks.PGD takes eps, norm, alpha",
    ),
    "eps-for-unbounded": (
        'kind = "torchattacks.CW"\neps = 0.5',
        "torchattacks.CW is a minimal-norm attack with no budget",
    ),
    "eps-for-noise": ('kind = "torchattacks.GN"\neps = 0.5', "has no budget"),
    "fractional-l0": (
        'kind = "torchattacks.OnePixel"\neps = 1.5',
        "an L0 budget counts changed pixels, so eps must be a whole number",
    ),
    "refused": (
        'kind = "torchattacks.LGV"',
        "torchattacks.LGV cannot run as a robench kind: it first fine-tunes copies",
    ),
    "targeted-where-unsupported": (
        'kind = "torchattacks.DeepFool"\ntargeted = "random"',
        "unknown key 'targeted'",
    ),
    "unknown-mode": ('kind = "torchattacks.PGD"\ntargeted = "rand"', "targeted"),
    "other-norm": ('kind = "torchattacks.PGD"\nnorm = "l2"', "it supports 'linf'"),
    "wrong-type": ('kind = "torchattacks.PGD"\nsteps = 2.5', "steps"),
}


def _suite(tmp_path: Path, entry: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(f'name = "bad"\nversion = 1\n\n[[perturbations]]\n{entry}\n')
    return path


@pytest.mark.parametrize("case", BAD_ENTRIES, ids=str)
def test_bad_entries_are_one_sentence_with_exit_code_2(case: str, tmp_path: Path) -> None:
    entry, expected = BAD_ENTRIES[case]
    result = CliRunner().invoke(app, ["validate", str(_suite(tmp_path, entry))])
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert "Traceback" not in result.output


def test_eval_refuses_eps_for_an_unbounded_attack_and_writes_nothing(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 'kind = "torchattacks.DeepFool"\neps = "8/255"')
    out = tmp_path / "out" / "report.json"
    result = CliRunner().invoke(app, ["eval", "vit_nano_fmnist", "-s", str(suite), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "minimal-norm attack with no budget" in result.output
    assert not out.parent.exists()


def test_a_library_failure_is_one_sentence() -> None:
    """JSMA's untargeted mode aims at (label + 1) mod 10: a 5-class model fails inside."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 12 * 12, 5)).eval()
    images, labels = tiny_batch(model)
    jsma = build_perturbation("torchattacks.JSMA", {"gamma": 0.01})
    with pytest.raises(ConfigError, match="the model needs at least 10 outputs"):
        jsma.perturb(model, images, labels.clamp(max=3) + 1, 0)


# --- end to end: report columns, curves and compare --at-eps -----------------------------------


def test_evaluate_records_min_norms_targets_and_accuracy_at_eps(
    trained_classifier: nn.Module, tmp_path: Path
) -> None:
    suite = [
        {"kind": "torchattacks.DeepFool", "steps": 10},
        {"kind": "torchattacks.CW", "steps": 10, "lr": 0.05, "targeted": "random"},
        {"kind": "torchattacks.OnePixel", "eps": 3, "steps": 2, "popsize": 4},
    ]
    out = tmp_path / "report.json"
    report = robench.evaluate(
        trained_classifier, suite, data="fashion-mnist", limit=12, batch_size=6, out=out,
        progress=False,
    )  # fmt: skip
    deepfool = next(r for r in report.results if r.name == "torchattacks.DeepFool")
    assert deepfool.params["threat_model"] == "minimal-norm"
    assert deepfool.params["norm"] == "l2" and "eps" not in deepfool.params
    norms = report.sample_values("torchattacks.DeepFool", "min_norm")
    top1 = report.sample_values("torchattacks.DeepFool", "top1")
    assert norms is not None and top1 is not None
    assert [n is None for n in norms] == top1  # robust exactly where no adversarial was found
    assert any(n is not None and n > 0 for n in norms)
    at = {r.name: r for r in accuracy_at_results(report, [0.0, 0.3, 100.0])}
    finite = [n for n in norms if n is not None]
    assert at["torchattacks.DeepFool@0"].metrics["top1"].value == pytest.approx(
        sum(1 for n in norms if n is None or n > 0) / len(norms)
    )
    assert at["torchattacks.DeepFool@100"].metrics["top1"].value == deepfool.metrics["top1"].value
    curve = eps_curve(report, deepfool)
    assert curve.x[-1] == pytest.approx(max(finite))
    targets = report.sample_values("torchattacks.CW", "target_class")
    labels = report.samples["default"].targets
    assert targets is not None and all(t != y for t, y in zip(targets, labels, strict=True))
    one_pixel = next(r for r in report.results if r.name == "torchattacks.OnePixel")
    assert one_pixel.params["budget_display"] == "L0 3 px"
    written = Report.model_validate(json.loads(out.read_text()))
    result = CliRunner().invoke(app, ["compare", str(out), "--at-eps", "0.3"])
    assert result.exit_code == 0, result.output
    value = accuracy_at_results(written, [0.3])[0].metrics["top1"].value
    assert "torchattacks.DeepFool@0.3" in result.output
    assert f"{100 * value:.2f}" in result.output
    assert not math.isnan(value)


def test_an_attacks_own_found_is_decided_as_the_scoring_pass_decides() -> None:
    """On a tie of the two largest logits (where a minimal-norm attack stops), argmax and topk
    may pick different classes: `min_norm` is decided with the scoring pass's top-k, so a
    sample is never reported both broken (a norm) and robust (top-1)."""
    from robench.perturbations.checks import SCORED_TOP_K, scored_prediction
    from robench.tasks.top_k_records import TOP_K

    assert SCORED_TOP_K == TOP_K
    logits = torch.tensor([[0.0, 4.0, 4.0, 1.0], [2.0, 1.0, 0.0, 3.0]])
    k = min(TOP_K, logits.shape[-1])
    assert scored_prediction(logits).tolist() == logits.topk(k, dim=-1).indices[:, 0].tolist()
