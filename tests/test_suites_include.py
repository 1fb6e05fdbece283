"""Suites that include another (`include = "NAME_OR_PATH"`, robench/evaluation/suite_files.py):
overrides and additions, nesting, loops refused, the hash over the resolved content,
`robench validate --resolved`, and the shipped suites rewritten as includes giving the suites,
the per-sample records and the pairing they gave before.

tests/golden/suites_before_include.json holds the TOML data of each shipped suite as it was
written before it became an include (read from the files of that commit).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robench._core.errors import ConfigError
from robench._core.toml_files import dump_toml, tomllib
from robench.cli import app
from robench.evaluation.suite_files import read_suite_file
from robench.evaluation.suites import bundled_suites, load_suite, suite_from_data

ROOT = Path(__file__).resolve().parents[1]
BEFORE = json.loads((ROOT / "tests" / "golden" / "suites_before_include.json").read_text())

BASE = """name = "base"
version = 3
description = "the base"
metrics = ["top1"]

[datasets.val]
optional = true
description = "validation images"

[[perturbations]]
kind = "clean"

[[perturbations]]
kind = "fgsm"
name = "fgsm-1"
eps = "1/255"

[[perturbations]]
kind = "pgd"
name = "pgd-4"
eps = "4/255"
steps = 5

[[diagnostics]]
kind = "collapse"
"""


def _write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


def _plan(name_or_path: str) -> list[tuple[str, str, dict]]:
    return [(p.label, p.kind, p.report_params()) for p in load_suite(name_or_path).plan]


# --- the rules -------------------------------------------------------------------------------


def test_an_entry_of_the_same_name_is_merged_in_place_and_a_new_one_added(tmp_path: Path) -> None:
    _write(tmp_path, "base.toml", BASE)
    child = _write(
        tmp_path,
        "child.toml",
        'include = "base.toml"\nname = "child"\nversion = 1\n'
        '[datasets.val]\nlayout = "imagenet"\n'
        '[[perturbations]]\nname = "pgd-4"\nsteps = 20\n'
        '[[perturbations]]\nkind = "fgsm"\nname = "fgsm-8"\neps = "8/255"\n',
    )
    loaded = load_suite(str(child))
    assert [p.label for p in loaded.plan] == ["clean", "fgsm-1", "pgd-4", "fgsm-8"]
    pgd = loaded.plan[2].report_params()
    assert pgd["steps"] == 20 and pgd["eps_display"] == "4/255"  # steps over, eps kept
    suite = loaded.suite
    assert (suite.name, suite.version, suite.description) == ("child", 1, "the base")
    assert suite.datasets["val"].layout == "imagenet" and suite.datasets["val"].optional
    assert [d.label for d in loaded.diagnostics] == ["collapse"]
    assert loaded.includes == (tmp_path / "base.toml",)


def test_drop_leaves_included_entries_out(tmp_path: Path) -> None:
    _write(tmp_path, "base.toml", BASE)
    child = _write(
        tmp_path,
        "child.toml",
        'include = "base.toml"\ndrop = ["fgsm-1", "collapse"]\nname = "c"\nversion = 1\n',
    )
    loaded = load_suite(str(child))
    assert [p.label for p in loaded.plan] == ["clean", "pgd-4"]
    assert loaded.diagnostics == ()


def test_includes_nest_and_paths_are_relative_to_the_including_file(tmp_path: Path) -> None:
    _write(tmp_path, "bases/base.toml", BASE)
    _write(
        tmp_path,
        "bases/middle.toml",
        'include = "base.toml"\nname = "m"\nversion = 1\n[[perturbations]]\nname = "fgsm-1"\n'
        'eps = "2/255"\n',
    )
    top = _write(
        tmp_path,
        "suites/top.toml",
        'include = "../bases/middle.toml"\nname = "t"\nversion = 1\n'
        '[[perturbations]]\nname = "pgd-4"\nsteps = 7\n',
    )
    plan = {label: params for label, _, params in _plan(str(top))}
    assert plan["fgsm-1"]["eps_display"] == "2/255" and plan["pgd-4"]["steps"] == 7
    assert load_suite(str(top)).includes == (
        tmp_path / "bases" / "middle.toml",
        tmp_path / "bases" / "base.toml",
    )


def test_a_shipped_name_is_included_by_name(tmp_path: Path) -> None:
    child = _write(
        tmp_path,
        "mine.toml",
        'include = "smoke"\nname = "mine"\nversion = 1\n[[perturbations]]\nname = "pgd-5"\n'
        "steps = 2\n",
    )
    plan = _plan(str(child))
    assert [label for label, _, _ in plan] == [label for label, _, _ in _plan("smoke")]
    assert dict((label, p) for label, _, p in plan)["pgd-5"]["steps"] == 2


def test_an_included_surrogate_checkpoint_stays_relative_to_its_own_file(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "bases/base.toml",
        'name = "b"\nversion = 1\n[[perturbations]]\nkind = "fgsm"\neps = "1/255"\n'
        'surrogate = "vit_nano_fmnist"\nsurrogate_checkpoint = "weights/s.safetensors"\n',
    )
    child = _write(tmp_path, "child.toml", 'include = "bases/base.toml"\nname = "c"\nversion = 1\n')
    (surrogate,) = {p.surrogate for p in load_suite(str(child)).plan}
    assert surrogate is not None and surrogate.checkpoint is not None
    assert surrogate.checkpoint.resolve() == tmp_path / "bases" / "weights" / "s.safetensors"


@pytest.mark.parametrize(
    ("files", "fragment"),
    [
        ({"a.toml": 'include = "b.toml"\nname = "a"\nversion = 1\n',
          "b.toml": 'include = "a.toml"\nname = "b"\nversion = 1\n'}, "includes itself"),
        ({"a.toml": 'include = "a.toml"\nname = "a"\nversion = 1\n'}, "includes itself"),
        ({"a.toml": 'include = "gone.toml"\nname = "a"\nversion = 1\n'}, "is not a file"),
        ({"a.toml": 'include = "smok"\nname = "a"\nversion = 1\n'}, "did you mean 'smoke'"),
        ({"a.toml": 'include = "base.toml"\nversion = 1\n', "base.toml": BASE}, "gives no name"),
        ({"a.toml": 'include = "base.toml"\nname = "a"\nversion = 1\ndrop = ["fgsm-2"]\n',
          "base.toml": BASE}, "did you mean 'fgsm-1'"),
        ({"a.toml": 'name = "a"\nversion = 1\ndrop = ["x"]\n[[perturbations]]\nkind = "clean"\n'},
         "no `include`"),
        ({"a.toml": 'include = "base.toml"\nname = "a"\nversion = 1\n[[perturbations]]\n'
          'name = "pgd-5"\nsteps = 1\n', "base.toml": BASE}, "did you mean 'pgd-4'"),
        ({"a.toml": 'include = "base.toml"\nname = "a"\nversion = 1\n[[perturbations]]\n'
          'name = "pgd-4"\nstepz = 1\n', "base.toml": BASE}, "stepz"),
    ],
    ids=["loop", "self", "missing", "unknown-name", "no-name", "drop-unknown", "drop-alone",
         "override-unknown", "bad-key"],
)  # fmt: skip
def test_bad_includes_are_one_sentence_and_exit_2(
    tmp_path: Path, files: dict[str, str], fragment: str
) -> None:
    for name, body in files.items():
        _write(tmp_path, name, body)
    with pytest.raises(ConfigError) as info:
        load_suite(str(tmp_path / "a.toml"))
    assert fragment in str(info.value) and "\n" not in str(info.value)
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "a.toml")])
    assert result.exit_code == 2 and "Traceback" not in result.output


# --- the hash --------------------------------------------------------------------------------


def test_the_hash_covers_what_the_suite_includes(tmp_path: Path) -> None:
    base = _write(tmp_path, "base.toml", BASE)
    child = _write(tmp_path, "child.toml", 'include = "base.toml"\nname = "c"\nversion = 1\n')
    before = load_suite(str(child)).sha256
    assert load_suite(str(base)).sha256 == hashlib.sha256(base.read_bytes()).hexdigest()
    base.write_text(BASE.replace("steps = 5", "steps = 6"))
    assert load_suite(str(child)).sha256 != before
    base.write_text("# a comment changes no entry\n" + BASE)
    assert load_suite(str(child)).sha256 == before  # the resolved content is what counts


# --- the shipped suites rewritten as includes --------------------------------------------------


REWRITTEN = sorted(BEFORE)


def test_the_rewritten_suites_are_includes() -> None:
    assert {"robustbench-cifar10-l2", "demo", "reproduction-fmnist"} <= set(REWRITTEN)
    for name in REWRITTEN:
        assert load_suite(name).includes, f"{name} includes nothing"


@pytest.mark.parametrize("name", REWRITTEN)
def test_a_rewritten_suite_resolves_to_what_it_was(name: str) -> None:
    assert read_suite_file(bundled_suites()[name]).data == BEFORE[name]
    loaded, before = load_suite(name), suite_from_data(BEFORE[name], "image-classification")
    assert loaded.suite == before.suite
    assert [(p.label, p.kind, p.report_params(), p.max_samples) for p in loaded.plan] == [
        (p.label, p.kind, p.report_params(), p.max_samples) for p in before.plan
    ]
    assert [(d.label, d.report_params()) for d in loaded.diagnostics] == [
        (d.label, d.report_params()) for d in before.diagnostics
    ]


def test_every_shipped_base_validates() -> None:
    bases = sorted((ROOT / "attacks" / "base").glob("*.toml"))
    assert bases
    for path in bases:
        assert load_suite(str(path)).plan


@pytest.mark.slow
def test_a_suite_as_an_include_gives_the_records_and_pairs_as_before(tmp_path: Path) -> None:
    """demo-certify (certify-smoke over certify, each overriding the smoothing entry) written
    out as it was before, one file, and as shipped: the same per-sample records; `gate` pairs
    the two reports (noting the changed sha256) and `compare` puts them in one table."""
    import robench
    from tests.test_api_evaluate import assert_same_records

    old = _write(tmp_path, "demo-certify.toml", dump_toml(BEFORE["demo-certify"]))
    before = robench.evaluate("vit_nano_fmnist", str(old), limit=2, batch_size=2, progress=False)
    after = robench.evaluate(
        "vit_nano_fmnist", "demo-certify", limit=2, batch_size=2, progress=False
    )
    assert_same_records(before, after)
    assert (before.suite.name, before.suite.version) == (after.suite.name, after.suite.version)
    assert before.suite.sha256 != after.suite.sha256
    outcome = robench.gate(before, after)
    assert outcome.passed
    assert any("suite file changed" in note for note in outcome.notes)
    assert len(robench.compare([before, after])) == 2


# --- robench validate --resolved -------------------------------------------------------------


def test_validate_resolved_prints_the_suite_as_one_toml_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["validate", "--resolved", "robustbench-cifar10-l2"])
    assert result.exit_code == 0, result.output
    assert "ok" in result.stderr and "1 file(s) valid" in result.stderr
    assert "ok " not in result.stdout
    header = result.stdout.splitlines()[0]
    assert (
        "robustbench-cifar10-linf.toml" in header
        and load_suite("robustbench-cifar10-l2").sha256 in header
    )
    assert tomllib.loads(result.stdout) == BEFORE["robustbench-cifar10-l2"]
    saved = _write(tmp_path, "resolved.toml", result.stdout)
    assert _plan(str(saved)) == _plan("robustbench-cifar10-l2")


def test_validate_without_resolved_says_what_a_suite_includes() -> None:
    result = CliRunner().invoke(app, ["validate", "demo-certify"])
    assert result.exit_code == 0, result.output
    assert "includes certify-smoke.toml, certify.toml" in result.stdout


def test_dump_toml_round_trips_every_shipped_suite() -> None:
    for path in bundled_suites().values():
        data = read_suite_file(path).data
        assert tomllib.loads(dump_toml(data)) == data, path.name
