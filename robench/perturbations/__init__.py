"""Perturbations: the contract, the registry of kinds, threat models and the check every
output must pass. `adversarial/` holds the attacks, `corruptions/` the ImageNet-C corruptions,
`text/` Word Swap on language-modelling text and the adversarial word and character attacks on
text classifiers (TextAttack's recipes), `sequences/` token substitution, pixel noise and
occlusion on LRA sequences.

Importing this package registers every built-in kind (`clean`, `fgsm`, `fgm`, `pgd`, `spsa`,
`autoattack`, `malt`, `minimal-norm`, `randomized-smoothing`, `smoothed-pgd`, `corruption`,
`word-swap`, `deepwordbug`, `pruthi`, `pwws`, `token-substitution`, `pixel-noise`,
`pixel-occlusion`, and, on first listing, `torchattacks.NAME` for every torchattacks attack
class) by its parameter schema only: no torch, no attack or corruption library.
Implementations are imported when a perturbation is built. Threat models (L-inf, L2, L1, L0)
are rows of `threat_models.NORMS`; a bounded kind's `norm` parameter picks one.
`certification/` holds randomized smoothing's certificates (Cohen et al., ICML 2019) and the
attack on the smoothed classifier that can test them (`smoothed-pgd`, SmoothAdv);
`sequences/` the Long Range Arena's edits.

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
