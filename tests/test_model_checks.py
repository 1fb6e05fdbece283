"""The checks run on the first batch before every evaluation (robench.models.checks)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from robench._core.errors import ConfigError
from robench.evaluation.request import _first_forward
from robench.models.checks import check_model
from robench.models.loading import load_model


class _Quantised(nn.Module):
    """Rounds its input to grey levels: a fine forward pass with a zero input gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(torch.round(x.flatten(1) * 255) / 255)


class _NoBackward(nn.Module):
    """Counts forwards and fails any backward pass through it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(16, 3)
        self.forwards = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.forwards += 1
        out = self.linear(x.flatten(1))
        if out.requires_grad:
            out.register_hook(lambda grad: (_ for _ in ()).throw(AssertionError("backward")))
        return out


def _batch(n: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.rand(n, 1, 4, 4, generator=generator), torch.randint(0, 3, (n,))


def test_masked_gradients_are_found_when_attacks_need_them() -> None:
    model = _Quantised().eval()
    found = check_model(model, *_batch(), gradients=True)
    assert found.bad_gradient_share == 1.0
    assert any("gradient masking" in warning for warning in found.warnings)


def test_a_suite_without_gradient_attacks_pays_no_backward_pass() -> None:
    model = _NoBackward().eval()
    found = check_model(model, *_batch(), gradients=False)  # the hook would raise on backward
    assert model.forwards == 2  # the randomness check's two forwards, nothing else
    assert found.bad_gradient_share == 0.0
    assert not found.randomized
    quantised = check_model(_Quantised().eval(), *_batch(), gradients=False)
    assert not any("gradient" in warning for warning in quantised.warnings)


def test_randomness_is_found_on_the_few_samples_checked() -> None:
    class Noisy(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.flatten(1)[:, :3] + torch.randn(x.shape[0], 3)

    found = check_model(Noisy(), *_batch(), gradients=False)
    assert found.randomized
    assert any("randomized" in warning for warning in found.warnings)


def test_out_of_memory_in_the_first_checks_is_not_called_a_shape_error() -> None:
    loaded = load_model("vit_nano_fmnist")

    def out_of_memory() -> None:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    with pytest.raises(ConfigError, match="ran out of GPU memory") as caught:
        _first_forward(loaded, out_of_memory)
    assert "--input-size" not in str(caught.value)

    def wrong_shape() -> None:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x10 and 16x3)")

    with pytest.raises(ConfigError, match="cannot run on inputs"):
        _first_forward(loaded, wrong_shape)
