"""The sanity battery flags gradient masking and randomized models, and passes a sound model."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

from robench.evaluation.sanity import QUICK_BUDGET, run_sanity

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


def _battery(model: nn.Module, fmnist_test: tuple[torch.Tensor, torch.Tensor], n: int = 64):
    images, labels = fmnist_test
    dataset = TensorDataset(images[:n], labels[:n])
    results = run_sanity(
        model,
        dataset,
        list(range(n)),
        eps=8 / 255,
        seed=0,
        batch_size=64,
        device=torch.device("cpu"),
        budget=QUICK_BUDGET,
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


def test_zeroed_input_gradients_are_flagged(trained_classifier: nn.Module, fmnist_test) -> None:
    checks = _battery(_RoundInput(trained_classifier), fmnist_test)
    grads = checks["gradients_and_determinism"]
    assert grads.status == "warn"
    assert grads.values["bad_gradient_share"] == 1.0
    # With no gradient, even an unbounded white-box attack cannot break the model.
    assert checks["unbounded_attack_breaks_model"].status == "warn"


def test_dropout_left_on_is_flagged_as_randomized(
    trained_classifier: nn.Module, fmnist_test
) -> None:
    checks = _battery(_AlwaysDropout(trained_classifier), fmnist_test, n=32)
    assert checks["gradients_and_determinism"].values["randomized"] == 1.0
    assert checks["gradients_and_determinism"].status == "warn"
    assert checks["randomized_eot"].status == "warn"
    assert 0.0 <= checks["randomized_eot"].values["eot"] <= 1.0


def test_elliptical_models_get_the_adaptive_comparison(fmnist_test) -> None:
    import timm

    from robench.models.normalization import NormalizedModel

    torch.manual_seed(0)
    model = NormalizedModel(
        timm.create_model("vit_nano_elliptical_patch4_28"), [0.286], [0.353]
    ).eval()
    checks = _battery(model, fmnist_test, n=16)
    adaptive = checks["elliptical_gradients_through_m"]
    assert set(adaptive.values) == {"with_m_gradients", "without_m_gradients"}
