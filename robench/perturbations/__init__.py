"""Perturbations: the contract, the registry of kinds, threat models and the check every
output must pass. `adversarial/` holds the attacks, `corruptions/` the ImageNet-C corruptions,
`text/` Word Swap on language-modelling text and TextAttack's recipes on text classifiers,
`sequences/` the Long Range Arena's edits, `certification/` randomized smoothing's
certificates (Cohen et al., ICML 2019) and the attack that can test them (SmoothAdv).

Importing this package registers every built-in kind (and, on first listing, a
`torchattacks.NAME` kind per torchattacks attack class) by its parameter schema only: no
torch, no attack or corruption library; implementations are imported when one is built.

May import: `robench.models`, `robench.data`, `robench.results`, `robench._core`.
"""

from __future__ import annotations

# Imported for their side effect: each module registers its kinds.
from robench.perturbations import clean  # noqa: F401
from robench.perturbations.adversarial import (
    malt_params,  # noqa: F401
    params,  # noqa: F401
    torchattacks_params,  # noqa: F401
)
from robench.perturbations.base import PERTURBATIONS as PERTURBATIONS
from robench.perturbations.base import Perturbation as Perturbation
from robench.perturbations.base import build_perturbation as build_perturbation
from robench.perturbations.certification import params as certification_params  # noqa: F401
from robench.perturbations.corruptions import params as corruption_params  # noqa: F401
from robench.perturbations.sequences import params as sequence_params  # noqa: F401
from robench.perturbations.text import attack_params as text_attack_params  # noqa: F401
from robench.perturbations.text import params as text_params  # noqa: F401

__all__ = ["PERTURBATIONS", "Perturbation", "build_perturbation"]
