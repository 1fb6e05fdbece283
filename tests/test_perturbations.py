"""Contract tests over every registered perturbation kind, plus attack-specific behaviour.

Every kind must: keep the output's shape and dtype, stay finite, in [0, 1] and inside the
eps-ball of its threat model (L-inf or L2) per sample, give identical images for the same
seed, and leave the model as it found it. Attacks must lower accuracy, attack the true labels,
and (where randomized) depend on the seed. L2 specifics and the parity with AutoAttack run
directly are in test_l2.py.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from pydantic import ValidationError
from torch import nn

from robench._core.errors import AttackCheckError, ConfigError
from robench.perturbations import PERTURBATIONS, Perturbation, build_perturbation
from robench.perturbations.adversarial.params import AutoAttackParams, PGDParams
from robench.perturbations.checks import ball_tolerance, check_adversarial
from robench.perturbations.threat_models import NORMS

EPS = 8 / 255
EPS_L2 = 1.0  # on 28x28 grey images, about the L2 size of an 8/255 L-inf sign perturbation
N_SAMPLES = 128


@dataclass(frozen=True)
class Case:
    """One perturbation configuration the contract tests run."""

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    randomized: bool = False  # a different seed must give different images
    n_samples: int = N_SAMPLES
    slow: bool = False
    bites: bool = False  # a gradient attack: must lower accuracy by more than 5 points


# Small but real configurations: few steps and queries, the same code paths as a full suite.
CASES: dict[str, Case] = {
    "clean": Case("clean"),
    "fgsm": Case("fgsm", {"eps": "8/255"}, bites=True),
    "fgm": Case("fgm", {"eps": EPS_L2}, bites=True),
    "pgd": Case("pgd", {"eps": "8/255", "steps": 5}, randomized=True, bites=True),
    "pgd-no-random-start": Case(
        "pgd", {"eps": "8/255", "steps": 5, "random_start": False}, bites=True
    ),
    "pgd-l2": Case("pgd", {"eps": EPS_L2, "norm": "l2", "steps": 5}, randomized=True, bites=True),
    "pgd-l2-no-random-start": Case(
        "pgd", {"eps": EPS_L2, "norm": "l2", "steps": 5, "random_start": False}, bites=True
    ),
    "spsa": Case("spsa", {"eps": "8/255", "steps": 5, "nb_sample": 16}, randomized=True),
    "apgd-ce": Case(
        "autoattack",
        {"eps": "8/255", "attacks": ["apgd-ce"], "n_iter": 10},
        randomized=True,
        bites=True,
    ),
    "apgd-ce-l2": Case(
        "autoattack",
        {"eps": EPS_L2, "norm": "l2", "attacks": ["apgd-ce"], "n_iter": 10},
        randomized=True,
        bites=True,
    ),
    # MALT's ranking, then APGD-T on the 2 best-ranked targets.
    "malt": Case(
        "malt",
        {"eps": "8/255", "n_iter": 10, "n_target_classes": 2},
        randomized=True,
        bites=True,
    ),
    "malt-l2": Case(
        "malt",
        {"eps": EPS_L2, "norm": "l2", "n_iter": 10, "n_target_classes": 2},
        randomized=True,
        bites=True,
    ),
    "square-l2": Case(
        "autoattack",
        {"eps": EPS_L2, "norm": "L2", "attacks": ["square"], "n_queries": 50},
        randomized=True,
    ),
    "square": Case(
        "autoattack", {"eps": "8/255", "attacks": ["square"], "n_queries": 50}, randomized=True
    ),
    # Certifies per sample (noise from per-sample seeds); returns the clean images.
    "randomized-smoothing": Case(
        "randomized-smoothing", {"sigma": 0.25, "n0": 8, "n": 32, "batch": 40}, n_samples=32
    ),
    # PGD-L2 on the smoothed classifier (an EOT over the smoothing noise), scored by PREDICT.
    "smoothed-pgd": Case(
        "smoothed-pgd",
        {
            "eps": EPS_L2,
            "norm": "l2",
            "sigma": 0.25,
            "noise_samples": 2,
            "steps": 3,
            "n": 20,
            "batch": 25,
        },
        n_samples=16,
    ),
    # Unbounded, per sample, model-free; randomness from the seed only.
    "corruption": Case(
        "corruption", {"corruption": "gaussian_noise", "severity": 3}, randomized=True
    ),
    "corruption-glass-blur": Case("corruption", {"corruption": "glass_blur", "severity": 2}),
    # APGD-CE, APGD-T and FAB-T (9 target classes each), Square, in sequence; fewer iterations.
    "autoattack-standard": Case(
        "autoattack",
        {"eps": "8/255", "version": "standard", "n_iter": 10, "n_queries": 100},
        n_samples=16,
        slow=True,
    ),
}


def _default_case(kind: str) -> Case:
    """A kind registered without an entry in CASES runs with its defaults (and eps if any)."""
    fields = PERTURBATIONS.get(kind).Params.model_fields
    return Case(kind, {"eps": "8/255"} if "eps" in fields else {})


def _all_cases() -> list[Any]:
    cases = dict(CASES)
    covered = {case.kind for case in CASES.values()}
    # Image perturbations (and task-free ones such as clean); text kinds have their own tests,
    # and so do the torchattacks.* kinds (tests/test_torchattacks_adapter.py: the same
    # contract with parameters small enough for every one of them).
    images = [
        k
        for k in PERTURBATIONS.names()
        if PERTURBATIONS.get(k).Params.task in ("image-classification", None)
        and not k.startswith("torchattacks.")
    ]
    cases.update({k: _default_case(k) for k in images if k not in covered})
    return [
        pytest.param(case, id=name, marks=[pytest.mark.slow] if case.slow else [])
        for name, case in cases.items()
    ]


ALL_CASES = _all_cases()
RANDOMIZED_CASES = [p for p in ALL_CASES if p.values[0].randomized]
ATTACK_CASES = [p for p in ALL_CASES if "eps" in p.values[0].params]


def _accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.no_grad():
        return (model(images).argmax(dim=1) == labels).float().mean().item()


def _predictions(model: nn.Module, images: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(images).argmax(dim=1)


@pytest.fixture(scope="module", autouse=True)
def _one_intra_op_thread() -> Iterator[None]:
    """The models here are tiny: one thread is as fast as two, and immune to the 10x slowdown
    torch's spinning worker threads suffer when other processes share the cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def batch(fmnist_test: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    images, labels = fmnist_test
    return images[:N_SAMPLES], labels[:N_SAMPLES]


@pytest.fixture(scope="module")
def run(
    trained_classifier: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]
) -> Callable[[Case, int], tuple[Perturbation, torch.Tensor]]:
    """Run a case on the first `case.n_samples` images with a seed; cached per (case, seed)."""
    cache: dict[tuple[int, int], tuple[Perturbation, torch.Tensor]] = {}

    def _run(case: Case, seed: int) -> tuple[Perturbation, torch.Tensor]:
        key = (id(case), seed)
        if key not in cache:
            pert = build_perturbation(case.kind, case.params)
            images, labels = batch[0][: case.n_samples], batch[1][: case.n_samples]
            cache[key] = (pert, pert.perturb(trained_classifier, images, labels, seed))
        return cache[key]

    return _run


# ---------------------------------------------------------------------------------------------
# The contract, over every registered kind


def test_every_kind_is_registered() -> None:
    expected = {"clean", "fgsm", "fgm", "pgd", "spsa", "autoattack", "corruption"}
    assert expected <= set(PERTURBATIONS.names())


def test_every_supported_norm_is_a_threat_model() -> None:
    """A kind's `norm` choices are rows of NORMS (the table the check and reports read)."""
    for kind in PERTURBATIONS.names():
        fields = PERTURBATIONS.get(kind).Params.model_fields
        if "eps" in fields:
            supported = typing.get_args(fields["norm"].annotation) or ("linf",)
            assert set(supported) <= set(NORMS), kind


@pytest.mark.parametrize("case", ALL_CASES)
def test_output_respects_threat_model(
    case: Case, run: Callable[..., Any], batch: tuple[torch.Tensor, torch.Tensor]
) -> None:
    pert, adv = run(case, 0)
    clean = batch[0][: case.n_samples]
    assert adv.shape == clean.shape and adv.dtype == clean.dtype
    assert torch.isfinite(adv).all()
    assert adv.min() >= 0 and adv.max() <= 1
    if pert.eps is not None:
        threat = pert.threat_model
        norm = case.params.get("norm", "l2" if case.kind == "fgm" else "linf")
        assert threat is NORMS[norm.lower()]
        assert pert.eps == pytest.approx(EPS if threat is NORMS["linf"] else EPS_L2)
        # per sample, in float64, with the float32 slack the post-attack check allows
        distances = threat.distance((adv - clean).double())  # (B,)
        assert distances.max().item() <= pert.eps + ball_tolerance(threat, clean)
        if case.bites:
            assert distances.max().item() > 0.5 * pert.eps  # it did perturb
    check_adversarial(clean, adv, pert.eps, name=case.kind, threat=pert.threat_model)


@pytest.mark.parametrize("case", ALL_CASES)
def test_same_seed_gives_identical_output(
    case: Case,
    run: Callable[..., Any],
    trained_classifier: nn.Module,
    batch: tuple[torch.Tensor, torch.Tensor],
) -> None:
    _, first = run(case, 0)
    torch.manual_seed(12345)  # the caller's RNG state must not matter
    images, labels = batch[0][: case.n_samples], batch[1][: case.n_samples]
    again = build_perturbation(case.kind, case.params).perturb(
        trained_classifier, images, labels, 0
    )
    assert torch.equal(first, again)


@pytest.mark.parametrize("case", RANDOMIZED_CASES)
def test_different_seed_gives_different_output(case: Case, run: Callable[..., Any]) -> None:
    assert not torch.equal(run(case, 0)[1], run(case, 1)[1])


@pytest.mark.parametrize("case", ALL_CASES)
def test_model_rng_and_stdout_are_left_alone(
    case: Case,
    trained_classifier: nn.Module,
    batch: tuple[torch.Tensor, torch.Tensor],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No change to the model's weights, mode, requires_grad or .grad (FAB calls .backward()),
    none to the caller's RNG state, and nothing printed: stdout carries results only."""
    model = trained_classifier
    before = {k: v.clone() for k, v in model.state_dict().items()}
    grads = [None if p.grad is None else p.grad.clone() for p in model.parameters()]
    images, labels = batch[0][:4], batch[1][:4]
    rng_state = torch.get_rng_state()
    build_perturbation(case.kind, case.params).perturb(model, images, labels, 0)
    assert capsys.readouterr().out == ""
    assert not model.training
    assert all(p.requires_grad for p in model.parameters())
    for p, grad in zip(model.parameters(), grads, strict=True):
        assert (
            (p.grad is None) if grad is None else (p.grad is not None and torch.equal(p.grad, grad))
        )
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert torch.equal(torch.get_rng_state(), rng_state)


@pytest.mark.parametrize("kind", ["fgsm", "fgm", "autoattack"])
@pytest.mark.parametrize(
    "context", [torch.no_grad, torch.inference_mode], ids=["no_grad", "inference"]
)
def test_attacks_work_under_no_grad(
    kind: str,
    context: Callable[[], Any],
    trained_classifier: nn.Module,
    batch: tuple[torch.Tensor, torch.Tensor],
) -> None:
    """A caller evaluating under no_grad / inference_mode still gets a real attack."""
    images, labels = batch[0][:32], batch[1][:32]
    params = {
        "fgsm": {"eps": EPS},
        "fgm": {"eps": EPS_L2},
        "autoattack": {"eps": EPS, "attacks": ["apgd-ce"], "n_iter": 5},
    }[kind]
    attack = build_perturbation(kind, params)
    expected = attack.perturb(trained_classifier, images, labels, 0)
    with context():
        adv = attack.perturb(trained_classifier, images, labels, 0)
    assert torch.equal(adv, expected) and not torch.equal(adv, images)


# ---------------------------------------------------------------------------------------------
# Attacks attack


@pytest.mark.parametrize("case", ATTACK_CASES)
def test_attack_does_not_raise_accuracy(
    case: Case,
    run: Callable[..., Any],
    trained_classifier: nn.Module,
    batch: tuple[torch.Tensor, torch.Tensor],
) -> None:
    images, labels = batch[0][: case.n_samples], batch[1][: case.n_samples]
    clean_acc = _accuracy(trained_classifier, images, labels)
    adv_acc = _accuracy(trained_classifier, run(case, 0)[1], labels)
    assert adv_acc <= clean_acc
    if case.bites:
        assert adv_acc < clean_acc - 0.05  # gradient attacks at 8/255 (L2: 1.0) must bite


def test_pgd_is_at_least_as_strong_as_fgsm(
    trained_classifier: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]
) -> None:
    labels = batch[1]
    fgsm = build_perturbation("fgsm", {"eps": EPS}).perturb(trained_classifier, *batch, 0)
    pgd = build_perturbation("pgd", {"eps": EPS}).perturb(trained_classifier, *batch, 0)
    fgsm_acc = _accuracy(trained_classifier, fgsm, labels)
    assert _accuracy(trained_classifier, pgd, labels) <= fgsm_acc + 0.02


def test_pgd_with_large_eps_breaks_the_model(
    trained_classifier: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]
) -> None:
    pgd = build_perturbation("pgd", {"eps": 0.5, "steps": 20})
    adv = pgd.perturb(trained_classifier, *batch, 0)
    assert _accuracy(trained_classifier, adv, batch[1]) < 0.10


@pytest.mark.parametrize(
    ("kind", "params"),
    [
        ("fgsm", {"eps": 0.3}),
        ("fgm", {"eps": 4.0}),
        ("pgd", {"eps": 0.3, "steps": 10}),
        ("pgd", {"eps": 4.0, "norm": "l2", "steps": 10}),
        ("autoattack", {"eps": 0.3, "attacks": ["apgd-ce"], "n_iter": 10}),
        ("autoattack", {"eps": 4.0, "norm": "l2", "attacks": ["apgd-ce"], "n_iter": 10}),
    ],
    ids=["fgsm", "fgm", "pgd", "pgd-l2", "apgd-ce", "apgd-ce-l2"],
)
def test_attacks_use_the_labels_passed_in(
    kind: str,
    params: dict[str, Any],
    trained_classifier: nn.Module,
    batch: tuple[torch.Tensor, torch.Tensor],
) -> None:
    """Against the true labels the model breaks; against deliberately wrong labels the attack
    pushes away from the wrong class, so the (correct) predictions survive. An attack that
    used the model's predictions would break the model in both runs."""
    model = trained_classifier
    images, labels = batch
    correct = _predictions(model, images) == labels
    images, labels = images[correct], labels[correct]
    wrong = (labels + 1) % 10
    attack = build_perturbation(kind, params)

    assert _accuracy(model, attack.perturb(model, images, labels, 0), labels) < 0.3
    against_wrong = attack.perturb(model, images, wrong, 0)
    assert _accuracy(model, against_wrong, labels) > 0.75
    if kind == "autoattack":  # samples already "misclassified" are returned as they came
        assert torch.equal(against_wrong, images)


@pytest.mark.parametrize("case", ATTACK_CASES)
def test_misclassified_samples_stay_misclassified(
    case: Case,
    run: Callable[..., Any],
    trained_classifier: nn.Module,
    batch: tuple[torch.Tensor, torch.Tensor],
) -> None:
    """Attacking the true label never repairs a sample the model already gets wrong (an
    attack on the predicted label could push it back to the true class)."""
    images, labels = batch[0][: case.n_samples], batch[1][: case.n_samples]
    wrong = _predictions(trained_classifier, images) != labels
    assert wrong.any()
    _, adv = run(case, 0)
    assert (_predictions(trained_classifier, adv[wrong]) != labels[wrong]).all()
    if case.kind in ("autoattack", "malt"):  # AutoAttack and MALT do not even touch them
        assert torch.equal(adv[wrong], images[wrong])


# ---------------------------------------------------------------------------------------------
# Models the attacks must cope with


class _LinearNoParams(nn.Module):
    """A linear classifier whose weights are a buffer: no parameters at all."""

    def __init__(self, n_classes: int) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.weight: torch.Tensor
        self.register_buffer("weight", torch.randn(28 * 28, n_classes, generator=generator))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1) @ self.weight


@pytest.mark.parametrize("kind", ["fgsm", "pgd", "spsa"])
def test_torchattacks_handles_a_model_without_parameters(
    kind: str, batch: tuple[torch.Tensor, torch.Tensor], capsys: pytest.CaptureFixture[str]
) -> None:
    model = _LinearNoParams(10).eval()
    images, labels = batch[0][:8], batch[1][:8]
    params: dict[str, Any] = {"eps": EPS, "steps": 2} if kind != "fgsm" else {"eps": EPS}
    if kind == "spsa":
        params["nb_sample"] = 4
    adv = build_perturbation(kind, params).perturb(model, images, labels, 0)
    check_adversarial(images, adv, EPS, name=kind)
    assert capsys.readouterr().out == ""


def test_torchattacks_does_not_normalise_a_mair_robmodel(
    batch: tuple[torch.Tensor, torch.Tensor],
) -> None:
    """torchattacks reads mean/std off a model class named RobModel and would then normalise
    the inputs itself; robench models normalise inside, so that must be switched off."""
    robmodel = type("RobModel", (_LinearNoParams,), {})(10).eval()
    robmodel.mean, robmodel.std = torch.tensor([0.5]), torch.tensor([0.25])
    images, labels = batch[0][:8], batch[1][:8]
    adv = build_perturbation("fgsm", {"eps": EPS}).perturb(robmodel, images, labels, 0)
    plain = build_perturbation("fgsm", {"eps": EPS}).perturb(
        _LinearNoParams(10).eval(), images, labels, 0
    )
    assert torch.equal(adv, plain)


def test_model_in_train_mode_is_attacked_in_eval_mode_and_restored(
    batch: tuple[torch.Tensor, torch.Tensor],
) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(28 * 28, 10)).train()
    images, labels = batch[0][:8], batch[1][:8]
    pgd = build_perturbation("pgd", {"eps": EPS, "steps": 3})
    first = pgd.perturb(model, images, labels, 0)
    assert model.training
    assert torch.equal(first, pgd.perturb(model, images, labels, 0))  # no dropout noise


def test_autoattack_caps_target_classes_for_few_classes(
    batch: tuple[torch.Tensor, torch.Tensor], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With 5 classes APGD-T and FAB-T get 4 target classes (not the default 9), and the
    library is run with exactly that."""
    from pyautoattack import AutoAttack as LibraryAutoAttack

    seen: dict[str, int] = {}
    original = LibraryAutoAttack.run_standard_evaluation

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen["apgd-t"] = self.apgd_targeted.n_target_classes
        seen["fab-t"] = self.fab.n_target_classes
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LibraryAutoAttack, "run_standard_evaluation", recording)
    model = _LinearNoParams(5).eval()
    images = batch[0][:8]
    labels = _predictions(model, images)
    params = {"eps": EPS, "version": "standard", "n_iter": 3, "n_queries": 10}
    attack = build_perturbation("autoattack", params)
    assert attack.params.n_target_classes == 9
    adv = attack.perturb(model, images, labels, 0)
    assert seen == {"apgd-t": 4, "fab-t": 4}
    check_adversarial(images, adv, EPS, name="autoattack")

    seen.clear()  # 10 classes: the requested 9 are kept
    model10 = _LinearNoParams(10).eval()
    attack.perturb(model10, images, _predictions(model10, images), 0)
    assert seen == {"apgd-t": 9, "fab-t": 9}


def test_autoattack_rejects_dlr_with_too_few_classes(
    batch: tuple[torch.Tensor, torch.Tensor],
) -> None:
    model = _LinearNoParams(3).eval()
    images = batch[0][:4]
    attack = build_perturbation("autoattack", {"eps": EPS, "attacks": ["apgd-t"]})
    with pytest.raises(ConfigError, match="at least 4 classes"):
        attack.perturb(model, images, _predictions(model, images), 0)


@pytest.mark.slow
def test_autoattack_rand_version_runs(
    trained_classifier: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]
) -> None:
    images, labels = batch[0][:8], batch[1][:8]  # 20 EOT samples per gradient: keep it small
    attack = build_perturbation("autoattack", {"eps": EPS, "version": "rand", "n_iter": 2})
    adv = attack.perturb(trained_classifier, images, labels, 0)
    check_adversarial(images, adv, EPS, name="autoattack")
    assert _accuracy(trained_classifier, adv, labels) <= _accuracy(
        trained_classifier, images, labels
    )


# ---------------------------------------------------------------------------------------------
# Parameters


def test_eps_fraction_parses_to_pixel_units() -> None:
    assert build_perturbation("fgsm", {"eps": "1/255"}).eps == 1 / 255
    assert build_perturbation("autoattack", {"eps": "8/255"}).eps == 8 / 255


def test_pgd_step_size_defaults_to_a_quarter_of_eps_and_takes_fractions() -> None:
    assert PGDParams.model_validate({"eps": "4/255"}).resolved_step_size == 1 / 255
    params = PGDParams.model_validate({"eps": "4/255", "step_size": "0.5/255"})
    assert params.resolved_step_size == 0.5 / 255
    assert params.steps == 20 and params.random_start and params.loss == "ce"


def test_spsa_defaults_and_advertorch_alias() -> None:
    params = build_perturbation("spsa", {"eps": EPS, "nb_iter": 7}).params
    assert params.model_dump() == {
        "eps": EPS,
        "norm": "linf",
        "steps": 7,
        "delta": 0.01,
        "lr": 0.01,
        "nb_sample": 128,
        "max_batch_size": 64,
    }


def test_autoattack_version_follows_attacks() -> None:
    assert AutoAttackParams(eps=EPS).version == "standard"
    custom = AutoAttackParams.model_validate({"eps": EPS, "attacks": ["square"]})
    assert custom.version == "custom" and custom.attacks == ("square",)
    assert custom.n_queries == 5000 and custom.n_target_classes == 9


@pytest.mark.parametrize(
    ("kind", "params"),
    [
        ("fgsm", {"eps": EPS, "steps": 3}),  # unknown parameter
        ("pgd", {"eps": EPS, "step": 3}),  # typo of a known one
        ("fgsm", {}),  # eps missing
        ("fgsm", {"eps": 2.0}),  # outside [0, 1]
        ("pgd", {"eps": EPS, "loss": "dlr"}),
        ("pgd", {"eps": EPS, "step_size": 0}),
        ("spsa", {"eps": EPS, "nb_sample": 0}),
        ("autoattack", {"eps": EPS, "norm": "L1"}),  # the library has it; robench has no row
        ("pgd", {"eps": EPS, "norm": "inf"}),
        ("fgsm", {"eps": EPS, "norm": "l2"}),  # the L2 step is kind "fgm"
        ("fgm", {"eps": EPS, "norm": "linf"}),  # the L-inf step is kind "fgsm"
        ("spsa", {"eps": EPS, "norm": "l2"}),
        ("autoattack", {"eps": EPS, "version": "standard", "attacks": ["apgd-ce"]}),
        ("autoattack", {"eps": EPS, "version": "custom"}),
        ("autoattack", {"eps": EPS, "attacks": ["apgd-ce", "apgd-ce"]}),
        ("autoattack", {"eps": EPS, "attacks": ["pgd"]}),
        ("autoattack", {"eps": EPS, "attacks": []}),
        ("clean", {"eps": EPS}),
    ],
)
def test_invalid_params_are_rejected(kind: str, params: dict[str, Any]) -> None:
    with pytest.raises((ValidationError, ConfigError)):
        build_perturbation(kind, params)


def test_unknown_eps_text_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="1/255"):
        build_perturbation("fgsm", {"eps": "eight/255"})


def test_unknown_kind_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match="Did you mean 'pgd'"):
        build_perturbation("pgdd", {"eps": EPS})


# ---------------------------------------------------------------------------------------------
# check_adversarial


@pytest.fixture
def clean_images() -> torch.Tensor:
    return torch.rand(4, 1, 8, 8, generator=torch.Generator().manual_seed(0))


def test_check_passes_a_valid_perturbation(clean_images: torch.Tensor) -> None:
    noise = (
        2 * torch.rand(clean_images.shape, generator=torch.Generator().manual_seed(1)) - 1
    ) * EPS
    check_adversarial(clean_images, (clean_images + noise).clamp(0, 1), EPS, name="noise")
    check_adversarial(clean_images, torch.zeros_like(clean_images), None, name="unbounded")


def test_check_rejects_leaving_the_ball(clean_images: torch.Tensor) -> None:
    adv = clean_images.clone()
    pixel = adv[1, 0, 2, 3]
    adv[1, 0, 2, 3] = pixel + 2 * EPS if pixel < 0.5 else pixel - 2 * EPS  # stays in [0, 1]
    with pytest.raises(AttackCheckError, match=r"'pgd'.*1 of 4 samples.*eps 0\.0313725"):
        check_adversarial(clean_images, adv, EPS, name="pgd")


def test_check_rejects_values_outside_the_unit_range(clean_images: torch.Tensor) -> None:
    adv = clean_images.clone()
    adv[0, 0, 0, 0] = 1.001
    with pytest.raises(AttackCheckError, match=r"outside \[0, 1\]"):
        check_adversarial(clean_images, adv, None, name="pgd")


def test_check_rejects_nan(clean_images: torch.Tensor) -> None:
    adv = clean_images.clone()
    adv[2, 0, 1, 1] = float("nan")
    with pytest.raises(AttackCheckError, match="non-finite"):
        check_adversarial(clean_images, adv, EPS, name="pgd")


def test_check_rejects_a_changed_shape_or_dtype(clean_images: torch.Tensor) -> None:
    with pytest.raises(AttackCheckError, match="shape"):
        check_adversarial(clean_images, clean_images[:3], EPS, name="pgd")
    with pytest.raises(AttackCheckError, match="dtype"):
        check_adversarial(clean_images, clean_images.double(), EPS, name="pgd")
