"""The input checks the tasks on token ids share: a perturbation keeps every row's length and
returns token ids (int64, >= 0)."""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from robench._core.errors import AttackCheckError


class TokenInputs:
    """Mixed into the token-id tasks (`Task` subclasses) for their `check_perturbed` and
    `check_inputs`."""

    token_row: ClassVar[str]  # what one row of ids is, for the messages: "window", "sequence"

    def check_perturbed(
        self, original: torch.Tensor, perturbed: torch.Tensor, perturbation: Any, *, name: str
    ) -> None:
        if perturbed.shape != original.shape:
            raise AttackCheckError(
                f"Perturbation {name!r} turned token ids of shape {tuple(original.shape)} into "
                f"{tuple(perturbed.shape)}; it must keep every {self.token_row}'s length."
            )
        self.check_inputs(perturbed, name=name)

    def check_inputs(self, inputs: torch.Tensor, *, name: str) -> None:
        if inputs.dtype != torch.long or (inputs.numel() and int(inputs.min()) < 0):
            raise AttackCheckError(
                f"Perturbation {name!r} produced inputs that are not token ids (int64, >= 0; "
                f"got {inputs.dtype}); a perturbation of {self.token_row}s must return token ids "
                "in the model's vocabulary."
            )
