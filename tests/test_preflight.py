"""Wrong names are answered before torch loads (robench/evaluation/checks/preflight.py): the same
one-sentence errors as the loaders', exit 2, and neither torch nor timm imported on the way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from robench._core.errors import CheckpointError, ConfigError, InputError
from robench.evaluation.checks.preflight import Preflight, check_model_name, check_names
from robench.models import timm_catalogue
from robench.models.timm_catalogue import CATALOGUE_PATH, trusted_catalogue

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "timm", "numpy")

# Runs robench's CLI (or the API, with "api" first) in a fresh interpreter and reports the exit
# code, the error text and every module imported, so the test sees what a user's process loads.
_PROBE = """
import json, sys
argv = json.loads(sys.argv[1])
import time
error, cpu = "", 0.0
if argv[0] == "api":
    import robench.api
    started = time.process_time()
    try:
        robench.api.evaluate(*argv[1:])
        code = 0
    except robench.api.InputError as exc:
        code, error = 2, str(exc)
    cpu = time.process_time() - started
else:
    sys.argv = ["robench", *argv]
    from robench.cli import main
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
result = {"code": code, "error": error, "cpu": cpu, "modules": sorted(sys.modules)}
print(json.dumps(result), file=sys.stderr)
"""


def _probe(argv: list[str], hf_home: Path) -> tuple[int, str, list[str], float]:
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(hf_home), "COLUMNS": "200"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argv)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    result = json.loads(done.stderr.strip().splitlines()[-1])
    return result["code"], result["error"] or done.stderr, result["modules"], result["cpu"]


WRONG = {
    "unknown suite": (["eval", "vit_nano_elliptical_fmnist", "--suite", "smok"],
                      "Unknown suite 'smok'. Did you mean 'smoke'"),
    "unknown model": (["eval", "vit_nano_elliptical_fmnis", "-s", "smoke"],
                      "Unknown model 'vit_nano_elliptical_fmnis'. Did you mean "
                      "'vit_nano_elliptical_fmnist'"),
    "missing checkpoint": (["eval", "vit_nano_patch4_28", "-c", "missing.safetensors"],
                           "checkpoint 'missing.safetensors' does not exist"),
    "timm tag not cached": (["eval", "resnet50.a1_in1k"],
                            "timm/resnet50.a1_in1k is not in the local Hugging Face cache"),
    "unknown timm tag": (["eval", "resnet50.a1_in1kk"],
                         "timm has no pretrained tag 'a1_in1kk' for resnet50 (closest: "
                         "resnet50.a1_in1k"),
    "hub repo not cached": (["eval", "hf-hub:timm/vit_tiny_patch16_224.augreg_in21k"],
                            "is not in the local Hugging Face cache"),
    "missing folder": (["eval", "local-dir:/no/such/folder"],
                       "model folder /no/such/folder does not exist"),
    "missing card": (["eval", "cards/mine.toml"], "model card cards/mine.toml does not exist"),
    "unknown surrogate": (["eval", "vit_nano_fmnist", "--surrogate", "vit_nano_fmnst"],
                          "Unknown model 'vit_nano_fmnst'"),
    "api unknown suite": (["api", "vit_nano_fmnist", "smok"], "Unknown suite 'smok'"),
    "api unknown model": (["api", "vit_nano_fmnis"], "Unknown model 'vit_nano_fmnis'"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(WRONG))
def test_a_wrong_name_exits_2_before_torch_loads(case: str, tmp_path: Path) -> None:
    argv, expected = WRONG[case]
    code, error, modules, cpu = _probe(argv, tmp_path)
    assert code == 2, error
    assert expected in error
    assert "Traceback" not in error
    if argv[0] == "api":  # importing robench.api loads torch; the call itself is instant
        assert cpu < 0.5, f"{case} took {cpu:.2f} s of CPU time"
    else:
        loaded = [name for name in HEAVY if name in modules]
        assert loaded == [], f"{case} imported {loaded}"


def test_a_bad_perturbation_in_a_suite_file_is_answered_before_torch(tmp_path: Path) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text('name = "s"\nversion = 1\n[[perturbations]]\nkind = "pgdd"\neps = 0.1\n')
    code, error, modules, _ = _probe(["eval", "vit_nano_fmnist", "-s", str(suite)], tmp_path)
    assert code == 2
    assert "pgdd" in error
    assert "torch" not in modules


@pytest.mark.parametrize(
    "name",
    [
        "vit_nano_fmnist",  # a shipped card
        "vit_nano_patch4_28",  # robench's zoo
        "transformer_lm_nano",  # robench's language models
        "resnet18",  # a timm architecture
        "resnet50.a1_in1k",  # with a checkpoint: the architecture of a tag
        "resnet50.no_such_tag",  # with a checkpoint, a tag is not looked up
    ],
)
def test_known_names_pass(name: str) -> None:
    check_model_name(name, has_checkpoint=True)


def test_a_cached_tag_passes_without_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "hub" / "models--timm--resnet50.a1_in1k"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("a" * 40)
    (repo / "snapshots" / ("a" * 40)).mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    check_model_name("resnet50.a1_in1k", has_checkpoint=False)
    with pytest.raises(ConfigError, match="not in the local Hugging Face cache"):
        check_model_name("resnet18.a1_in1k", has_checkpoint=False)


def test_under_another_timm_unknown_names_are_left_to_timm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalogue holds one timm's names: under another it is not trusted, so a name it
    lacks is not refused early (timm itself decides, later)."""
    monkeypatch.setattr(timm_catalogue, "installed_timm_version", lambda: "0.0.1")
    trusted_catalogue.cache_clear()
    try:
        assert trusted_catalogue() is None
        check_model_name("a_model_of_a_newer_timm", has_checkpoint=True)
    finally:
        monkeypatch.undo()
        trusted_catalogue.cache_clear()
    with pytest.raises(ConfigError, match="Unknown model 'a_model_of_a_newer_timm'"):
        check_model_name("a_model_of_a_newer_timm", has_checkpoint=True)


def test_imports_leave_every_name_to_the_loaders() -> None:
    check_names(Preflight(model="registered_by_my_module", suite="smok", imports=("mine.py",)))


def test_a_checkpoint_that_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="is a directory"):
        check_names(Preflight(model="vit_nano_patch4_28", checkpoint=tmp_path))


def test_a_card_whose_checkpoint_is_missing(tmp_path: Path) -> None:
    card = tmp_path / "c.toml"
    card.write_text(
        'name = "c"\narchitecture = "vit_nano_patch4_28"\ncheckpoint = "gone.safetensors"\n'
    )
    with pytest.raises(CheckpointError, match=r"gone\.safetensors' does not exist"):
        check_names(Preflight(model=str(card)))
    check_names(Preflight(model=str(card), checkpoint=card))  # -c replaces the card's


def test_python_api_raises_input_error_for_a_missing_checkpoint() -> None:
    import robench

    with pytest.raises(InputError, match="does not exist"):
        robench.evaluate("vit_nano_patch4_28", checkpoint="no/such.safetensors")


def test_the_catalogue_is_the_installed_timm_s() -> None:
    """Regenerate with save_catalogue() when timm's pin moves (robench/models/timm_catalogue.py)."""
    stored = json.loads(CATALOGUE_PATH.read_text(encoding="utf-8"))
    # In a fresh process: earlier tests register timm models of their own in this one.
    code = "import json; from robench.models.timm_catalogue import build_catalogue as b; "
    code += "print(json.dumps(b()))"
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stderr
    assert stored == json.loads(fresh.stdout)
    assert trusted_catalogue() is not None
