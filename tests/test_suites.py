"""Suites: shipped files validate, pixel values parse, bad files give one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from robench._core.errors import ConfigError
from robench._core.units import display_pixel_value, parse_pixel_value
from robench.evaluation.suites import Suite, bundled_suites, load_suite
from robench.tasks import TASKS


def test_shipped_suites_include_the_required_ones() -> None:
    assert {"smoke", "paper-adversarial", "autoattack-standard"} <= set(bundled_suites())


@pytest.mark.parametrize("name", sorted(bundled_suites()))
def test_every_shipped_suite_loads_and_names_match_files(name: str) -> None:
    loaded = load_suite(name)
    assert loaded.suite.name == name
    assert len(loaded.sha256) == 64


def test_paper_adversarial_is_in_pixel_units_with_pgd20() -> None:
    plan = {p.label: p for p in load_suite("paper-adversarial").plan}
    assert set(plan) == {"clean", "fgsm", "pgd-20", "spsa"}
    pgd = plan["pgd-20"].report_params()
    assert pgd["eps"] == pytest.approx(1 / 255)
    assert pgd["eps_display"] == "1/255"
    assert pgd["steps"] == 20
    assert pgd["step_size"] == pytest.approx(0.25 / 255)
    assert plan["spsa"].perturbation.eps == pytest.approx(1 / 255)


def test_autoattack_suite_has_individual_attacks_and_the_sequential_worst_case() -> None:
    plan = {p.label: p.report_params() for p in load_suite("autoattack-standard").plan}
    assert plan["autoattack"]["version"] == "standard"
    for name in ("apgd-ce", "apgd-t", "fab-t", "square"):
        assert list(plan[name]["attacks"]) == [name]


@pytest.mark.parametrize(
    ("text", "value", "shown"),
    [("1/255", 1 / 255, "1/255"), ("0.25/255", 0.25 / 255, "0.25/255"), (0.1, 0.1, "0.1")],
)
def test_pixel_values_parse_and_display(text: str | float, value: float, shown: str) -> None:
    parsed = parse_pixel_value(text)
    assert parsed == pytest.approx(value)
    assert display_pixel_value(parsed) == shown


def _write(tmp_path: Path, body: str) -> str:
    path = tmp_path / "suite.toml"
    path.write_text(body)
    return str(path)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            'name = "x"\nversion = 1\n[[perturbations]]\nkind = "pgdd"\neps = 0.1\n',
            "Did you mean 'pgd'",
        ),
        ('name = "x"\nversion = 1\n[[perturbations]]\nkind = "pgd"\neps = "one"\n', "eps"),
        ('name = "x"\n[[perturbations]]\nkind = "clean"\n', "version"),
        (
            'name = "x"\nversion = 1\n[[perturbations]]\nkind = "fgsm"\neps = 0.1\nstepz = 3\n',
            "stepz",
        ),
        ('name = "x"\nversion = 1\nperturbations = [\n', "not valid TOML"),
        (
            'name = "x"\nversion = 1\nmetrics = ["top3"]\n[[perturbations]]\nkind = "clean"\n',
            "top1",
        ),
        (
            'name = "x"\nversion = 1\n[[perturbations]]\nkind = "clean"\n'
            '[[perturbations]]\nkind = "clean"\n',
            "two perturbations",
        ),
    ],
)
def test_bad_suite_files_raise_one_config_error(tmp_path: Path, body: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_suite(_write(tmp_path, body))
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_unknown_suite_name_suggests_a_close_one() -> None:
    with pytest.raises(ConfigError, match="Did you mean 'smoke'"):
        load_suite("smok")


def test_a_smoothing_entry_in_a_suite_naming_no_metrics_reports_its_certificates() -> None:
    """Without `metrics`, a suite reports its task's defaults and then the certificates only
    a randomized-smoothing entry fills: a hand-written entry is not scored on top-1 alone."""
    entry = {"kind": "randomized-smoothing", "name": "rs", "sigma": 0.25}
    suite = Suite.model_validate({"name": "s", "version": 1, "perturbations": [entry]})
    defaults = TASKS.get("image-classification").default_metrics
    assert suite.metrics == (*defaults, "certified_accuracy", "acr", "abstention_rate")
    plain = Suite.model_validate({"name": "s", "version": 1, "perturbations": [{"kind": "clean"}]})
    assert plain.metrics == defaults
    named = {"name": "s", "version": 1, "metrics": ["top1"], "perturbations": [entry]}
    assert Suite.model_validate(named).metrics == ("top1",)  # a named list is kept as given
