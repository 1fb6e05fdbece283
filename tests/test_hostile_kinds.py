"""Every perturbation kind refuses meaningless parameters before any model loads.

`HOSTILE` is the catalogue: one row per registered kind (robench's own, the `torchattacks.*`
kinds, the LRA and text kinds), each a parameter a user gives by mistake that once ran and
reported the clean accuracy as robust (`steps = -1`, `n_queries = 0`, `eot_iter = 0`) or
left `min_norm` null (`c = -1`, DeepFool's `steps = 0`). A kind registered without a row
fails `test_every_registered_kind_has_a_hostile_row`: a new kind brings its row.

hypothesis then fuzzes suite entries (any kind, any key, any value): each is accepted or
refused with robench's own error, never a traceback.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robench._core.errors import RobenchError
from robench.evaluation.suites import suite_from_data
from robench.perturbations.base import PERTURBATIONS

IMAGES = "image-classification"
TEXT = "text-classification"
LRA = "sequence-classification"

# kind -> (task, hostile parameters, phrase of the refusal). One row per registered kind.
HOSTILE: dict[str, tuple[str, dict[str, Any], str]] = {
    "clean": (IMAGES, {"eps": 0.1}, "eps"),
    "fgsm": (IMAGES, {"eps": -1}, "eps"),
    "fgm": (IMAGES, {"eps": "1/0"}, "eps"),
    "pgd": (IMAGES, {"eps": "1/255", "steps": 0}, "steps"),
    "spsa": (IMAGES, {"eps": "1/255", "nb_sample": 0}, "nb_sample"),
    "autoattack": (IMAGES, {"eps": "1/255", "version": "fast"}, "version"),
    "malt": (IMAGES, {"eps": "8/255", "n_iter": 0}, "n_iter"),
    "minimal-norm": (IMAGES, {"eps": "8/255", "method": "fmn", "steps": -1}, "steps"),
    "corruption": (IMAGES, {"corruption": "gaussian_noise", "severity": 9}, "severity"),
    "randomized-smoothing": (IMAGES, {"sigma": 0.25, "n0": 10, "n": 0}, "n"),
    "smoothed-pgd": (IMAGES, {"eps": 0.25, "sigma": -0.25}, "sigma"),
    "word-swap": ("language-modeling", {"rate": 1.5}, "rate"),
    "deepwordbug": (TEXT, {"query_budget": 0}, "query_budget"),
    "pruthi": (TEXT, {"query_budget": -1}, "query_budget"),
    "pwws": (TEXT, {"query_budget": 0}, "query_budget"),
    "token-substitution": (LRA, {"rate": 0}, "rate"),
    "pixel-noise": (LRA, {"std": -1}, "std"),
    "pixel-occlusion": (LRA, {"size": 0}, "size"),
    # torchattacks: bounds from what each parameter means (catalogue BOUNDS, CHOICES).
    "torchattacks.APGD": (IMAGES, {"n_restarts": 0}, "n_restarts"),
    "torchattacks.APGDT": (IMAGES, {"eot_iter": 0}, "eot_iter"),
    "torchattacks.AutoAttack": (IMAGES, {"version": "fast"}, "version"),
    "torchattacks.BIM": (IMAGES, {"steps": -1}, "steps"),
    "torchattacks.CW": (IMAGES, {"c": -1}, "c"),
    "torchattacks.DIFGSM": (IMAGES, {"diversity_prob": 1.5}, "diversity_prob"),
    "torchattacks.DeepFool": (IMAGES, {"steps": 0}, "steps"),
    "torchattacks.EADEN": (IMAGES, {"binary_search_steps": 0}, "binary_search_steps"),
    "torchattacks.EADL1": (IMAGES, {"max_iterations": 0}, "max_iterations"),
    "torchattacks.EOTPGD": (IMAGES, {"eot_iter": 0}, "eot_iter"),
    "torchattacks.FAB": (IMAGES, {"norm": "l1"}, "norm"),
    "torchattacks.FFGSM": (IMAGES, {"alpha": 0}, "alpha"),
    "torchattacks.FGSM": (IMAGES, {"eps": -0.1}, "eps"),
    "torchattacks.GN": (IMAGES, {"std": -0.1}, "std"),
    "torchattacks.JSMA": (IMAGES, {"gamma": 0}, "gamma"),
    "torchattacks.Jitter": (IMAGES, {"scale": 0}, "scale"),
    "torchattacks.LGV": (IMAGES, {}, "cannot run as a robench kind"),
    "torchattacks.MIFGSM": (IMAGES, {"decay": -1}, "decay"),
    "torchattacks.MultiAttack": (IMAGES, {}, "cannot run as a robench kind"),
    "torchattacks.NIFGSM": (IMAGES, {"steps": 0}, "steps"),
    "torchattacks.OnePixel": (IMAGES, {"popsize": 0}, "popsize"),
    "torchattacks.PGD": (IMAGES, {"steps": -1}, "steps"),
    "torchattacks.PGDL2": (IMAGES, {"norm": "linf"}, "norm"),
    "torchattacks.PGDRS": (IMAGES, {"noise_batch_size": 0}, "noise_batch_size"),
    "torchattacks.PGDRSL2": (IMAGES, {"noise_type": "gaussian"}, "noise_type"),
    "torchattacks.PIFGSM": (IMAGES, {"num_iter_set": 0}, "num_iter_set"),
    "torchattacks.PIFGSMPP": (IMAGES, {"prob": 2}, "prob"),
    "torchattacks.Pixle": (IMAGES, {"restarts": 0}, "restarts"),
    "torchattacks.RFGSM": (IMAGES, {"alpha": -1}, "alpha"),
    "torchattacks.SINIFGSM": (IMAGES, {"m": 0}, "m"),
    "torchattacks.SPSA": (IMAGES, {"nb_iter": 0}, "nb_iter"),
    "torchattacks.SparseFool": (IMAGES, {"lam": 0}, "lam"),
    "torchattacks.Square": (IMAGES, {"n_queries": 0}, "n_queries"),
    "torchattacks.TIFGSM": (IMAGES, {"kernel_name": "box"}, "kernel_name"),
    "torchattacks.TPGD": (IMAGES, {"steps": 0}, "steps"),
    "torchattacks.UPGD": (IMAGES, {"loss": "mse"}, "loss"),
    "torchattacks.VANILA": (IMAGES, {"eps": 0.1}, "eps"),
    "torchattacks.VMIFGSM": (IMAGES, {"N": 0}, "N"),
    "torchattacks.VNIFGSM": (IMAGES, {"beta": -1}, "beta"),
}


def _robench_kinds() -> set[str]:
    """robench's own kinds: a plugin an earlier test imported in this process registers
    kinds of its own (examples/plugins/gamma_perturbation.py), which need no row here."""
    return {
        name
        for name in PERTURBATIONS.names()
        if PERTURBATIONS.get(name).target.startswith("robench.")
    }


def test_every_registered_kind_has_a_hostile_row() -> None:
    missing = sorted(_robench_kinds() - set(HOSTILE))
    assert missing == [], (
        f"kinds without a hostile-input row in tests/test_hostile_kinds.py: {missing}"
    )
    gone = sorted(set(HOSTILE) - _robench_kinds())
    assert gone == [], f"rows for kinds no longer registered: {gone}"


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_meaningless_parameter_is_refused_before_any_model_loads(kind: str) -> None:
    task, params, phrase = HOSTILE[kind]
    with pytest.raises(RobenchError) as refused:
        suite_from_data([{"kind": kind, **params}], task)
    message = str(refused.value)
    assert refused.value.exit_code == 2, message
    assert phrase in message and "\n" not in message, message


@pytest.mark.parametrize(
    ("kind", "params"),
    [
        ("torchattacks.PGD", {"steps": 1}),
        ("torchattacks.Square", {"n_queries": 1, "loss": "ce"}),
        ("torchattacks.CW", {"c": 0.5}),
        ("torchattacks.EOTPGD", {"eot_iter": 1}),
        ("torchattacks.FAB", {"norm": "l2", "eps": 0.5}),
    ],
)
def test_the_smallest_meaningful_values_are_accepted(kind: str, params: dict[str, Any]) -> None:
    suite_from_data([{"kind": kind, **params}], IMAGES)


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(min_value=-5, max_value=5), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@st.composite
def _entries(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(HOSTILE)))
    schema = PERTURBATIONS.get(kind).Params
    keys = st.one_of(st.sampled_from([*schema.model_fields, "eps", "name"]), st.text(max_size=8))
    return {"kind": kind, **draw(st.dictionaries(keys, _VALUES, max_size=3))}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entry=_entries(), task=st.sampled_from([IMAGES, TEXT, LRA]))
def test_any_suite_entry_is_accepted_or_refused_with_robench_s_error(
    entry: dict[str, Any], task: str
) -> None:
    try:
        suite_from_data([entry], task)
    except RobenchError as exc:
        assert exc.exit_code == 2 and str(exc), repr(exc)
