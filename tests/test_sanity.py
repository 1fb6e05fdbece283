"""The sanity battery flags gradient masking and randomized models, and passes a sound model."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from robench.evaluation.sanity.checks import QUICK_BUDGET, run_sanity
from robench.models.layers.elliptical_attention import EllipticalAttention
from robench.results.report.checks import TOLERANCE

pytestmark = pytest.mark.slow


class _RoundInput(nn.Module):
    """Quantise the input to 255 grey levels: the forward pass is fine, the gradient is zero."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(torch.round(x * 255) / 255)


class _AlwaysDropout(nn.Module):
    """Dropout that stays on in eval mode, as a model left randomized would."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(nn.functional.dropout(x, p=0.3, training=True))


def _battery(
    model: nn.Module,
    fmnist_test: tuple[torch.Tensor, torch.Tensor],
    n: int = 64,
    norm: str = "linf",
    eps: float = 8 / 255,
):
    images, labels = fmnist_test
    dataset = TensorDataset(images[:n], labels[:n])
    # A wrapper is built in train mode; restoring it afterwards would also put the shared
    # `trained_classifier` fixture inside it in train mode for later tests.
    model.eval()
    results = run_sanity(
        model,
        dataset,
        list(range(n)),
        eps=eps,
        seed=0,
        batch_size=64,
        device=torch.device("cpu"),
        budget=QUICK_BUDGET,
        norm=norm,
    )
    return {r.name: r for r in results}


def test_a_sound_model_passes_the_core_checks(trained_classifier: nn.Module, fmnist_test) -> None:
    checks = _battery(trained_classifier, fmnist_test)
    for name in (
        "eps0_equals_clean",
        "monotone_in_eps",
        "pgd_at_least_fgsm",
        "unbounded_attack_breaks_model",
        "gradients_and_determinism",
    ):
        assert checks[name].status == "pass", checks[name]
    assert checks["eps0_equals_clean"].values["eps0"] == checks["eps0_equals_clean"].values["clean"]
    sweep = [checks["monotone_in_eps"].values[f"eps_x{f}"] for f in (0.25, 0.5, 1.0, 2.0)]
    assert sweep == sorted(sweep, reverse=True)
    assert checks["unbounded_attack_breaks_model"].values["accuracy"] <= 0.05
    assert "randomized_eot" not in checks
    assert "elliptical_gradients_through_m" not in checks  # not an elliptical model


def test_zeroed_input_gradients_are_flagged(trained_classifier: nn.Module, fmnist_test) -> None:
    checks = _battery(_RoundInput(trained_classifier), fmnist_test)
    grads = checks["gradients_and_determinism"]
    assert grads.status == "warn"
    assert grads.values["bad_gradient_share"] == 1.0
    # With no gradient, even an unbounded white-box attack cannot break the model.
    assert checks["unbounded_attack_breaks_model"].status == "warn"
    # Masked, but not by an elliptical layer: the adaptive comparison does not apply.
    assert "elliptical_gradients_through_m" not in checks


def test_zeroed_input_gradients_under_l2(trained_classifier: nn.Module, fmnist_test) -> None:
    # PGD-L2 normalises its step by the gradient's norm: with a zero gradient it must still
    # give the clean images at eps 0 (not 0/0), and flag the masking like L-infinity does.
    checks = _battery(_RoundInput(trained_classifier), fmnist_test, n=32, norm="l2", eps=0.5)
    assert checks["eps0_equals_clean"].status == "pass"
    assert checks["gradients_and_determinism"].values["bad_gradient_share"] == 1.0
    assert checks["unbounded_attack_breaks_model"].status == "warn"


def test_dropout_left_on_is_flagged_as_randomized(
    trained_classifier: nn.Module, fmnist_test
) -> None:
    checks = _battery(_AlwaysDropout(trained_classifier), fmnist_test, n=32)
    assert checks["gradients_and_determinism"].values["randomized"] == 1.0
    assert checks["gradients_and_determinism"].status == "warn"
    eot = checks["randomized_eot"]
    assert eot.status == "warn"
    assert eot.values["pgd"] == checks["pgd_at_least_fgsm"].values["pgd"]  # the same PGD run
    assert (eot.values["eot"] * 32).is_integer()  # an accuracy on the 32 samples
    assert f"{100 * eot.values['eot']:.1f}%" in eot.detail


class _MaskedUnlessThroughM(nn.Module):
    """Quantise the input like `_RoundInput`, with a straight-through gradient only while the
    model's elliptical layers let gradients flow through M: the same outputs either way, but a
    PGD that stops gradients at M sees a zero gradient and one through M does not."""

    def __init__(self, inner: nn.Module, layers: tuple[EllipticalAttention, ...]) -> None:
        super().__init__()
        self.inner = inner
        self.layers = layers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rounded = torch.round(x * 255) / 255
        if any(layer.differentiable for layer in self.layers):
            rounded = x + (rounded - x).detach()
        return self.inner(rounded)


def _pgd_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float) -> float:
    """Accuracy under a plain 10-step PGD from the clean images (no random start)."""
    adv = x.clone()
    for _ in range(10):
        adv.requires_grad_(True)
        (grad,) = torch.autograd.grad(nn.functional.cross_entropy(model(adv), y), adv)
        adv = torch.min(torch.max(adv.detach() + eps / 4 * grad.sign(), x - eps), x + eps)
        adv = adv.clamp(0, 1)
    with torch.no_grad():
        return (model(adv).argmax(-1) == y).float().mean().item()


def test_an_elliptical_model_weaker_through_m_is_flagged_with_its_numbers(fmnist_test) -> None:
    from robench.models.loading import load_model

    model = load_model("vit_nano_elliptical_fmnist").model  # the shipped, trained checkpoint
    layers = tuple(m for m in model.modules() if isinstance(m, EllipticalAttention))
    vit = model.model
    vit.patch_embed.proj = _MaskedUnlessThroughM(vit.patch_embed.proj, layers)
    n, eps = 16, 8 / 255
    images, labels = fmnist_test[0][:n], fmnist_test[1][:n]

    # Independent numbers: clean accuracy; PGD without M gradients cannot move (exactly
    # clean); PGD with them breaks the model.
    with torch.no_grad():
        clean = (model(images).argmax(-1) == labels).float().mean().item()
    assert _pgd_accuracy(model, images, labels, eps) == clean
    for layer in layers:
        layer.differentiable = True
    through_m = _pgd_accuracy(model, images, labels, eps)
    for layer in layers:
        layer.differentiable = False
    assert clean >= 0.75 and through_m <= clean - 0.4

    checks = _battery(model, fmnist_test, n=n)
    assert not any(layer.differentiable for layer in layers)  # the battery restores the flags
    assert checks["eps0_equals_clean"].values["clean"] == clean
    adaptive = checks["elliptical_gradients_through_m"]
    without, with_m = adaptive.values["without_m_gradients"], adaptive.values["with_m_gradients"]
    assert adaptive.status == "warn", adaptive
    # "without" is the battery's own PGD number, near clean (only its random start moves it).
    assert without == checks["pgd_at_least_fgsm"].values["pgd"]
    assert without == checks["black_box_not_stronger"].values["pgd"]
    assert clean - 2 / n <= without <= clean + 2 / n
    # "with" agrees with the independent PGD through M, and is far below "without".
    assert abs(with_m - through_m) <= 3 / n
    assert with_m <= without - 0.4
    assert f"{100 * with_m:.1f}%" in adaptive.detail and f"{100 * without:.1f}%" in adaptive.detail


def test_the_l2_battery_attacks_in_l2(trained_classifier: nn.Module, fmnist_test) -> None:
    n, eps = 64, 0.5
    images, labels = fmnist_test
    results = run_sanity(
        trained_classifier,
        TensorDataset(images[:n], labels[:n]),
        list(range(n)),
        eps=eps,
        seed=0,
        batch_size=64,
        device=torch.device("cpu"),
        budget=QUICK_BUDGET,
        norm="l2",
    )
    checks = {r.name: r for r in results}
    # SPSA is L-inf only: its check is left out, not passed; FGM replaces FGSM.
    assert list(checks) == [
        "eps0_equals_clean",
        "monotone_in_eps",
        "pgd_at_least_fgm",
        "unbounded_attack_breaks_model",
        "gradients_and_determinism",
    ]
    assert all(r.status == "pass" for r in results), results
    zero = checks["eps0_equals_clean"].values
    assert zero["eps0"] == zero["clean"] and zero["clean"] >= 0.6
    # The sweep (eps 0.125 .. 1) falls from clean, within the comparisons' slack, and the
    # largest L2 ball does real damage.
    sweep = [checks["monotone_in_eps"].values[f"eps_x{f}"] for f in (0.25, 0.5, 1.0, 2.0)]
    accs = [zero["clean"], *sweep]
    assert all(b <= a + TOLERANCE for a, b in itertools.pairwise(accs)), accs
    assert sweep[-1] <= zero["clean"] - 0.2
    one_step = checks["pgd_at_least_fgm"].values
    assert one_step["pgd"] <= one_step["fgm"] + TOLERANCE
    assert one_step["pgd"] == checks["monotone_in_eps"].values["eps_x1.0"]
    assert checks["unbounded_attack_breaks_model"].values["accuracy"] <= 0.05
    # Budgets are L2 numbers: the sweep 0.125 .. 1, the unbounded ball the diagonal sqrt(784).
    detail = checks["monotone_in_eps"].detail
    assert detail.startswith("PGD-L2-10 accuracy by eps: 0.125: ")
    assert all(f"{b}: " in detail for b in ("0.25", "0.5", "1")) and "/255" not in detail
    assert "vs FGM " in checks["pgd_at_least_fgm"].detail
    assert checks["pgd_at_least_fgm"].detail.endswith("at eps 0.5")
    assert "with eps 28 " in checks["unbounded_attack_breaks_model"].detail


_L2_SUITE = """
name = "l2-only"
version = 1
[[perturbations]]
kind = "clean"
[[perturbations]]
kind = "pgd"
norm = "l2"
eps = 0.25
[[perturbations]]
kind = "fgm"
eps = 1.0
"""

_MIXED_SUITE = """
name = "mixed"
version = 1
[[perturbations]]
kind = "pgd"
norm = "l2"
eps = 0.5
[[perturbations]]
kind = "fgsm"
eps = "4/255"
[[perturbations]]
name = "pgd-linf"
kind = "pgd"
eps = "8/255"
"""


@pytest.mark.parametrize(
    ("suite", "sanity_eps", "norm", "eps"),
    [
        (_L2_SUITE, None, "l2", 1.0),  # all bounded entries L2: L2 at the largest L2 eps
        (_L2_SUITE, 0.3, "l2", 0.3),  # --sanity-eps overrides the budget, not the norm
        (_MIXED_SUITE, None, "linf", 8 / 255),  # mixed: L-inf at the largest L-inf eps, not 0.5
    ],
)
def test_the_battery_takes_the_suite_s_threat_model(
    suite: str, sanity_eps: float | None, norm: str, eps: float, tmp_path, monkeypatch
) -> None:
    from robench.evaluation.request import EvalRequest
    from robench.evaluation.sanity import checks as sanity
    from robench.evaluation.sanity.battery import run_battery
    from robench.evaluation.suites import load_suite
    from robench.tasks import load_task

    path = tmp_path / "suite.toml"
    path.write_text(suite)
    seen: dict = {}
    monkeypatch.setattr(sanity, "run_sanity", lambda *args, **kwargs: seen.update(kwargs) or [])
    request = EvalRequest(
        suite=str(path), data="x", out=tmp_path / "r.json", sanity=True, sanity_eps=sanity_eps
    )
    cpu = torch.device("cpu")
    task = load_task("image-classification")
    results, _ = run_battery(request, load_suite(str(path)), task, None, None, [0], cpu)  # type: ignore[arg-type]
    assert results == []
    assert seen["norm"] == norm and seen["eps"] == pytest.approx(eps)
