"""Attack names in figures come from one table that every perturbation kind's registration
fills: `fgm` was once missing from a hand-written map in plots.py and showed as "fgm"."""

from __future__ import annotations

import robench.perturbations  # noqa: F401  (registers every kind)
from robench.perturbations.base import PERTURBATIONS
from robench.results.report.attack_names import ATTACK_NAMES, attack_name


def test_every_registered_kind_has_a_display_name() -> None:
    kinds = set(PERTURBATIONS.names())  # first: listing registers the torchattacks.* kinds
    assert set(ATTACK_NAMES) == kinds


def test_display_names_read_the_results_parameters() -> None:
    assert attack_name("fgm", {"eps": 0.5, "norm": "l2"}) == "FGM"
    assert attack_name("fgsm", {"eps": 1 / 255}) == "FGSM"
    assert attack_name("pgd", {"eps": 1 / 255, "steps": 20}) == "PGD-20"
    assert attack_name("autoattack", {"n_iter": 100}) == "AutoAttack"
    assert attack_name("autoattack", {"n_iter": 10}) == "AutoAttack (lite)"
    assert attack_name("clean", {}) == "clean (ε = 0)"
    assert attack_name("word-swap", {"rate": 0.025}) == "Word Swap"


def test_a_kind_registered_nowhere_shows_its_kind_name() -> None:
    assert attack_name("plugin-attack", {"eps": 0.1}) == "plugin-attack"
