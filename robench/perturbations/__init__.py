"""Perturbations: the contract, the registry of kinds and the check every output must pass.

Importing this package registers every built-in kind (`clean`, `fgsm`, `pgd`, `spsa`,
`autoattack`); attack libraries themselves are imported only when an attack runs.
"""

from __future__ import annotations

# Imported for their side effect: each module registers its kinds.
from robench.perturbations import autoattack, clean, torchattacks_linf  # noqa: F401
from robench.perturbations.base import PERTURBATIONS as PERTURBATIONS
from robench.perturbations.base import Perturbation as Perturbation
from robench.perturbations.base import build_perturbation as build_perturbation
from robench.perturbations.checks import check_adversarial as check_adversarial

__all__ = ["PERTURBATIONS", "Perturbation", "build_perturbation", "check_adversarial"]
