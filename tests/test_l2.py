"""The L2 threat model: the table row, the post-attack check, the L2 attacks, and per-sample
parity of robench's AutoAttack with pyautoattack run directly, for L-inf and L2.

The contract tests over every kind (ball, [0, 1], determinism under a seed, model left alone)
run the L2 cases too: see CASES in test_perturbations.py.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from torch import nn

from robench._core.errors import EXIT_RUNTIME, AttackCheckError
from robench.evaluation.suites import load_suite
from robench.perturbations import build_perturbation
from robench.perturbations.adversarial.params import AutoAttackParams, PGDParams
from robench.perturbations.checks import ball_tolerance, check_adversarial, project_onto_ball
from robench.perturbations.threat_models import NORMS

L2 = NORMS["l2"]
LINF = NORMS["linf"]
FLOAT32_EPS = float(torch.finfo(torch.float32).eps)


@pytest.fixture(scope="module", autouse=True)
def _one_intra_op_thread() -> Iterator[None]:
    """Tiny models: one thread is as fast, and immune to oversubscribed cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.no_grad():
        return (model(images).argmax(dim=1) == labels).float().mean().item()


def _robust(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-sample verdicts: True where the model still predicts the true label."""
    with torch.no_grad():
        return model(images).argmax(dim=1) == labels


def _at_l2_distance(clean: torch.Tensor, distance: float, seed: int = 0) -> torch.Tensor:
    """`clean` moved by exactly `distance` in L2 (float64) along a random direction, staying in
    [0, 1] (clean lies in [0.25, 0.75] and the step's values are small)."""
    direction = torch.randn(clean.shape, generator=torch.Generator().manual_seed(seed)).double()
    direction /= direction.flatten(1).norm(dim=1).view(-1, *[1] * (clean.dim() - 1))
    return (clean.double() + distance * direction).to(clean.dtype)


@pytest.fixture
def mid_grey() -> torch.Tensor:
    """Images in [0.25, 0.75], so small steps never leave [0, 1]: (2, 1, 28, 28)."""
    return 0.25 + 0.5 * torch.rand(2, 1, 28, 28, generator=torch.Generator().manual_seed(0))


# ---------------------------------------------------------------------------------------------
# The table row


def test_l2_distance_is_the_norm_over_the_whole_image() -> None:
    diff = torch.zeros(2, 3, 4, 4, dtype=torch.float64)
    diff[0, 0, 0, 0], diff[0, 2, 3, 3] = 0.3, -0.4  # sqrt(0.09 + 0.16) = 0.5
    diff[1] = 0.01  # 48 values: 0.01 * sqrt(48)
    torch.testing.assert_close(
        L2.distance(diff), torch.tensor([0.5, 0.01 * math.sqrt(48)]).double()
    )
    torch.testing.assert_close(LINF.distance(diff), torch.tensor([0.4, 0.01]).double())


def test_l2_projection_invariants() -> None:
    """Inside: bit-for-bit unchanged. Outside: scaled back along the same direction onto the
    sphere of radius eps (within rounding). Projecting twice changes nothing more."""
    generator = torch.Generator().manual_seed(0)
    clean = torch.rand(6, 3, 32, 32, generator=generator)
    radii = torch.tensor([0.1, 0.49, 0.5, 0.51, 2.0, 30.0])
    direction = torch.randn(clean.shape, generator=generator)
    direction /= direction.flatten(1).norm(dim=1).view(-1, 1, 1, 1)
    adv = clean + radii.view(-1, 1, 1, 1) * direction
    eps = 0.5
    projected = L2.project(adv, clean, eps)

    distance = L2.distance((projected - clean).double())
    tolerance = L2.tolerance(3 * 32 * 32, FLOAT32_EPS)
    inside = L2.distance((adv - clean).double()) <= eps
    assert torch.equal(projected[inside], adv[inside])
    assert (distance[~inside] - eps).abs().max() <= tolerance
    cosine = nn.functional.cosine_similarity(
        (projected - clean).flatten(1).double(), (adv - clean).flatten(1).double()
    )
    torch.testing.assert_close(cosine, torch.ones(6, dtype=torch.float64))
    torch.testing.assert_close(L2.project(projected, clean, eps), projected, rtol=0, atol=1e-6)


def test_linf_row_projects_by_clamping() -> None:
    generator = torch.Generator().manual_seed(1)
    clean, adv = torch.rand(4, 3, 8, 8, generator=generator), torch.rand(4, 3, 8, 8)
    expected = torch.minimum(torch.maximum(adv, clean - 0.1), clean + 0.1)
    assert torch.equal(LINF.project(adv, clean, 0.1), expected)


def test_budgets_are_shown_with_their_norm() -> None:
    assert LINF.budget_display(8 / 255) == "Linf 8/255"
    assert LINF.budget_display(4 / 255) == "Linf 4/255"
    assert L2.budget_display(0.5) == "L2 0.5"
    assert L2.budget_display(128 / 255) == "L2 0.501961"  # L2 budgets are not k/255


def test_l2_tolerance_grows_with_the_image_and_is_tiny_beside_eps() -> None:
    imagenet = L2.tolerance(3 * 224 * 224, FLOAT32_EPS)
    cifar = L2.tolerance(3 * 32 * 32, FLOAT32_EPS)
    assert imagenet == pytest.approx(math.sqrt(150528) * FLOAT32_EPS)  # 4.6e-5
    assert imagenet < 1e-4 * 0.5 and cifar == pytest.approx(6.6e-6, rel=0.01)
    assert L2.tolerance(3 * 32 * 32, float(torch.finfo(torch.float64).eps)) == 1e-6  # floor
    assert LINF.tolerance(3 * 224 * 224, FLOAT32_EPS) == 1e-6  # L-inf: one value's rounding


def test_l2_eps_may_exceed_one_but_linf_may_not() -> None:
    assert PGDParams.model_validate({"eps": 2.0, "norm": "l2"}).eps == 2.0
    with pytest.raises(ValueError, match=r"\[0, 1\].*'linf'"):
        PGDParams.model_validate({"eps": 2.0})


@pytest.mark.parametrize("spelling", ["l2", "L2", " l2 "])
def test_norm_accepts_the_libraries_spellings(spelling: str) -> None:
    assert PGDParams.model_validate({"eps": 0.5, "norm": spelling}).norm == "l2"
    assert AutoAttackParams.model_validate({"eps": 0.5, "norm": spelling}).norm == "l2"
    assert AutoAttackParams.model_validate({"eps": 0.5, "norm": "Linf"}).norm == "linf"
    attack = build_perturbation("autoattack", {"eps": 0.5, "norm": spelling})
    assert attack.threat_model is L2


# ---------------------------------------------------------------------------------------------
# The post-attack check


def test_check_refuses_an_l2_violation_and_accepts_a_valid_one(mid_grey: torch.Tensor) -> None:
    """0.6 away fails an eps 0.5 L2 attack's check (runtime failure, exit 3); 0.49 passes."""
    far = _at_l2_distance(mid_grey, 0.6)
    with pytest.raises(AttackCheckError, match=r"'pgd'.*L2 eps-ball in 2 of 2.*0\.6.*L2 0\.5"):
        check_adversarial(mid_grey, far, 0.5, name="pgd", threat=L2)
    assert AttackCheckError.exit_code == EXIT_RUNTIME
    check_adversarial(mid_grey, _at_l2_distance(mid_grey, 0.49), 0.5, name="pgd", threat=L2)


def test_check_uses_the_threat_model_it_is_given(mid_grey: torch.Tensor) -> None:
    """Every pixel 0.02 away: L-inf 0.02 but L2 0.02 * 28 = 0.56. Inside an L-inf ball of
    0.5, outside an L2 ball of 0.5."""
    adv = mid_grey + 0.02
    check_adversarial(mid_grey, adv, 0.5, name="pgd", threat=LINF)
    with pytest.raises(AttackCheckError, match="L2"):
        check_adversarial(mid_grey, adv, 0.5, name="pgd", threat=L2)


def test_check_absorbs_float32_rounding_on_large_images() -> None:
    """Projected onto the L2 sphere in float32, a 3x224x224 image lands within the documented
    tolerance of eps, though not always within 1e-6."""
    generator = torch.Generator().manual_seed(0)
    clean = torch.rand(4, 3, 224, 224, generator=generator)
    adv = (clean + 0.01 * torch.randn(clean.shape, generator=generator)).clamp(0, 1)
    projected = L2.project(adv, clean, 0.5)
    excess = L2.distance((projected - clean).double()) - 0.5
    assert excess.abs().max() <= ball_tolerance(L2, clean)
    check_adversarial(clean, projected, 0.5, name="pgd", threat=L2)


def test_project_onto_ball_keeps_the_librarys_samples_and_fixes_violations(
    mid_grey: torch.Tensor, caplog: pytest.LogCaptureFixture
) -> None:
    near = _at_l2_distance(mid_grey, 0.5 + 0.5 * ball_tolerance(L2, mid_grey))  # rounding
    assert torch.equal(project_onto_ball(near, mid_grey, 0.5, name="lib", threat=L2), near)

    adv = torch.cat([near[:1], _at_l2_distance(mid_grey[1:], 0.9)])
    with caplog.at_level(logging.WARNING):
        fixed = project_onto_ball(adv, mid_grey, 0.5, name="lib", threat=L2)
    assert "1 of 2 images" in caplog.text and "L2 0.5" in caplog.text
    assert torch.equal(fixed[0], adv[0])
    assert L2.distance((fixed[1:] - mid_grey[1:]).double()).item() == pytest.approx(0.5, abs=1e-6)
    check_adversarial(mid_grey, fixed, 0.5, name="lib", threat=L2)


# ---------------------------------------------------------------------------------------------
# PGD-L2 and FGM


@pytest.fixture(scope="module")
def batch(fmnist_test: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    images, labels = fmnist_test
    return images[:128], labels[:128]


def test_pgd_l2_and_fgm_stay_in_the_ball_and_reduce_accuracy(
    trained_classifier: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]
) -> None:
    images, labels = batch
    model = trained_classifier
    clean_acc = _accuracy(model, images, labels)
    results = {}
    for kind, params in [
        ("fgm", {"eps": 1.0}),
        ("pgd", {"eps": 1.0, "norm": "l2", "steps": 20}),
    ]:
        attack = build_perturbation(kind, params)
        adv = attack.perturb(model, images, labels, 0)
        check_adversarial(images, adv, 1.0, name=kind, threat=attack.threat_model)
        distance = L2.distance((adv - images).double())
        assert distance.max() <= 1.0 + ball_tolerance(L2, images)
        results[kind] = _accuracy(model, adv, labels)
    assert results["fgm"] < clean_acc - 0.1
    assert results["pgd"] <= results["fgm"] + 0.02  # iterating is at least as strong


def test_pgd_l2_with_a_large_budget_breaks_the_model(
    trained_classifier: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]
) -> None:
    pgd = build_perturbation("pgd", {"eps": 4.0, "norm": "l2", "steps": 20})
    assert _accuracy(trained_classifier, pgd.perturb(trained_classifier, *batch, 0), batch[1]) < 0.1


def test_pgd_l2_is_torchattacks_pgdl2(
    trained_classifier: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]
) -> None:
    """robench's PGD-L2 equals torchattacks.PGDL2 run directly with the same seed."""
    import torchattacks

    images, labels = batch[0][:32], batch[1][:32]
    ours = build_perturbation(
        "pgd", {"eps": 1.0, "norm": "l2", "steps": 5, "step_size": 0.3}
    ).perturb(trained_classifier, images, labels, 7)
    torch.manual_seed(7)
    direct = torchattacks.PGDL2(trained_classifier, eps=1.0, alpha=0.3, steps=5)(images, labels)
    assert torch.equal(ours, direct)


def test_fgm_is_one_l2_normalised_gradient_step(
    trained_classifier: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]
) -> None:
    """x + eps * g / ||g||_2, clipped to [0, 1]; a sample's step does not depend on its batch."""
    images, labels = batch[0][:16], batch[1][:16]
    x = images.clone().requires_grad_(True)
    nn.functional.cross_entropy(trained_classifier(x), labels).backward()
    assert x.grad is not None
    grad = x.grad / x.grad.flatten(1).norm(dim=1).view(-1, 1, 1, 1)
    expected = (images + 0.5 * grad).clamp(0, 1)
    fgm = build_perturbation("fgm", {"eps": 0.5})
    adv = fgm.perturb(trained_classifier, images, labels, 0)
    torch.testing.assert_close(adv, expected, rtol=0, atol=1e-6)
    alone = fgm.perturb(trained_classifier, images[3:4], labels[3:4], 0)
    torch.testing.assert_close(alone, adv[3:4], rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Parity with AutoAttack run directly

PARITY_SAMPLES = 64
PARITY_ITERATIONS = 20  # APGD-CE, APGD-T and FAB-T iterations (standard: 100)
PARITY_QUERIES = 200  # Square queries (standard: 5000)


def _library_autoattack(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    norm: str,
    eps: float,
    seed: int,
) -> tuple[torch.Tensor, Any]:
    """pyautoattack's standard evaluation, configured only through the library's own API: the
    standard version, its APGD attacks rebuilt by their constructors with fewer iterations
    (the settings `_set_version("standard")` gives them otherwise), FAB's iterations and
    Square's queries reduced; one call with the whole set as one batch."""
    from pyautoattack import AutoAttack
    from pyautoattack.autopgd_base import APGDAttack, APGDAttack_targeted

    attack = AutoAttack(model, norm=norm, eps=eps, version="standard", seed=seed)  # type: ignore[arg-type]
    attack.verbose = False
    common: dict[str, Any] = {
        "n_restarts": 1,
        "n_iter": PARITY_ITERATIONS,
        "eps": eps,
        "norm": norm,
        "eot_iter": 1,
        "rho": 0.75,
        "seed": seed,
        "device": "cpu",
        "logger": attack.logger,
    }
    attack.apgd = APGDAttack(model, **common)
    attack.apgd_targeted = APGDAttack_targeted(model, n_target_classes=9, **common)
    attack.fab.n_iter = PARITY_ITERATIONS
    attack.square.n_queries = PARITY_QUERIES
    adv, _ = attack.run_standard_evaluation(images, labels, batch_size=images.shape[0])
    return adv, attack


@pytest.mark.slow
@pytest.mark.parametrize(
    ("norm", "library_norm", "eps"),
    [("linf", "Linf", 8 / 255), ("l2", "L2", 1.0)],
    ids=["linf", "l2"],
)
def test_autoattack_verdicts_equal_the_librarys_own(
    norm: str,
    library_norm: str,
    eps: float,
    trained_classifier: nn.Module,
    fmnist_test: tuple[torch.Tensor, torch.Tensor],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Same model, data, eps, norm, version and seed: robench's AutoAttack gives the same
    per-sample robust / non-robust verdicts as pyautoattack called directly (and, on one
    batch, the same images bit for bit: nothing in the wrapping changes them)."""
    from pyautoattack import AutoAttack as LibraryAutoAttack

    model = trained_classifier
    images, labels = fmnist_test[0][:PARITY_SAMPLES], fmnist_test[1][:PARITY_SAMPLES]
    direct_adv, direct = _library_autoattack(
        model, images, labels, norm=library_norm, eps=eps, seed=3
    )
    direct_robust = _robust(model, direct_adv, labels)

    seen: dict[str, Any] = {}
    original = LibraryAutoAttack.run_standard_evaluation

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.update(norm=self.norm, epsilon=self.epsilon, attacks=list(self.attacks_to_run))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LibraryAutoAttack, "run_standard_evaluation", recording)
    ours = build_perturbation(
        "autoattack",
        {
            "eps": eps,
            "norm": norm,
            "version": "standard",
            "n_iter": PARITY_ITERATIONS,
            "n_queries": PARITY_QUERIES,
        },
    )
    torch.manual_seed(12345)  # the caller's RNG state must not matter
    our_adv = ours.perturb(model, images, labels, 3)
    our_robust = _robust(model, our_adv, labels)

    assert seen == {"norm": library_norm, "epsilon": eps, "attacks": direct.attacks_to_run}
    clean_robust = _robust(model, images, labels)
    # Not a trivial comparison: some samples fall to the attack, some survive it.
    assert 0 < int(direct_robust.sum()) < int(clean_robust.sum())
    assert torch.equal(our_robust, direct_robust)
    assert torch.equal(our_adv, direct_adv)
    check_adversarial(images, our_adv, eps, name="autoattack", threat=NORMS[norm])


# ---------------------------------------------------------------------------------------------
# RobustBench suites


@pytest.mark.parametrize(
    ("suite", "norm", "eps", "budget"),
    [
        ("robustbench-cifar10-linf", "linf", 8 / 255, "Linf 8/255"),
        ("robustbench-cifar10-l2", "l2", 0.5, "L2 0.5"),
        ("robustbench-imagenet-linf", "linf", 4 / 255, "Linf 4/255"),
    ],
)
def test_robustbench_suites_run_autoattack_standard(
    suite: str, norm: str, eps: float, budget: str
) -> None:
    loaded = load_suite(suite)
    assert "RobustBench" in loaded.suite.description
    attacks = [p for p in loaded.plan if p.kind == "autoattack"]
    assert [p.kind for p in loaded.plan] == ["clean", "autoattack"] and len(attacks) == 1
    params = attacks[0].report_params()
    assert params["version"] == "standard" and params["attacks"] is None
    assert params["norm"] == norm and params["eps"] == pytest.approx(eps)
    assert params["budget_display"] == budget
    for default in ("n_iter", "n_restarts", "eot_iter"):  # the library's standard settings
        assert params[default] is None
    assert params["n_queries"] == 5000 and params["n_target_classes"] == 9
    assert attacks[0].perturbation.threat_model is NORMS[norm]
