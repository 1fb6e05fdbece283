"""A command that needs an optional extra that is not installed says so before any work: one
sentence naming `pip install 'robench[EXTRA]'`, exit 2, nothing written; the demo skips the
sections that need one, with one line each, and finishes with exit 0.

A module is hidden as a by-hand install without the extra lacks it: in this process by
`sys.modules[name] = None` (what `import name` then refuses), and in a fresh process by an
import hook that `hide_modules/sitecustomize.py` installs from ROBENCH_TEST_HIDDEN_MODULES.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robench._core.extras import MODULE_EXTRAS, is_installed
from robench._core.toml_files import tomllib
from robench.cli import app
from robench.cli._demo import PLANS, skipped_sections

ROOT = Path(__file__).resolve().parents[1]
HIDE_DIR = Path(__file__).resolve().parent / "hide_modules"


def _hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def _one_sentence_exit_2(args: list[str], extra: str) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert f"`pip install 'robench[{extra}]'`" in lines[0], lines[0]
    assert "Traceback" not in result.output and "unexpected" not in result.output
    return lines[0]


def test_every_module_names_an_extra_of_pyproject() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for module, extra in MODULE_EXTRAS.items():
        names = {re.split(r"[<>=\[; ]", req)[0].replace("-", "_") for req in extras[extra]}
        assert module in names, (module, extra, extras[extra])


def test_a_hidden_module_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_installed("json") and not is_installed("no_such_module_anywhere")
    _hide(monkeypatch, "json")
    assert not is_installed("json")


def test_hf_model_without_transformers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "transformers")
    out = tmp_path / "r.json"
    args = ["eval", "hf:models/gpt2_bpe_pydocs", "-s", "text-smoke", "--limit", "2"]
    line = _one_sentence_exit_2([*args, "-o", str(out)], "hf")
    assert "hf:models/gpt2_bpe_pydocs" in line and "transformers" in line
    assert list(tmp_path.iterdir()) == []


def test_pwws_without_nltk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "nltk")
    out = tmp_path / "r.json"
    model = "text_classifier_nano_baseline_docs"
    args = ["eval", model, "-s", "demo-text-classification", "--limit", "2", "-o", str(out)]
    assert "PWWS" in _one_sentence_exit_2(args, "text")
    assert list(tmp_path.iterdir()) == []


def test_parquet_data_without_pyarrow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "pyarrow")
    data = tmp_path / "test.parquet"
    data.write_bytes(b"PAR1 not read: the check comes first")
    model = "text_classifier_nano_baseline_docs"
    out = tmp_path / "r.json"
    args = ["eval", model, "-s", "text-classification-smoke", "-d", str(data), "-o", str(out)]
    assert "parquet" in _one_sentence_exit_2(args, "text")
    assert sorted(tmp_path.iterdir()) == [data]


def test_sweep_of_hf_model_without_transformers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hide(monkeypatch, "transformers")
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'out_dir = "sweep"\nsuites = ["text-smoke"]\nseeds = [0]\n\n'
        '[[models]]\nmodel = "hf:models/gpt2_bpe_pydocs"\n'
    )
    _one_sentence_exit_2(["sweep", str(plan)], "hf")
    assert not (tmp_path / "sweep").exists()


def test_sweep_with_slurm_without_submitit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "submitit")
    plan = tmp_path / "plan.toml"
    plan.write_text(
        'executor = "slurm"\nout_dir = "sweep"\nsuites = ["smoke"]\nseeds = [0]\n\n'
        '[[models]]\nmodel = "vit_nano_fmnist"\n'
    )
    _one_sentence_exit_2(["sweep", str(plan)], "slurm")


@pytest.mark.parametrize(
    ("hidden", "skipped"),
    [
        ((), set()),
        (("transformers",), {"-subword"}),
        (("nltk",), {"-text-classification"}),
        (("transformers", "nltk"), {"-subword", "-text-classification"}),
    ],
)
def test_the_demo_knows_what_to_skip_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, hidden: tuple[str, ...], skipped: set[str]
) -> None:
    _hide(monkeypatch, *hidden)
    found = skipped_sections(PLANS["quick"])
    assert set(found) == skipped
    for line in found.values():
        assert "\n" not in line and re.search(r"`pip install 'robench\[(hf|text)\]'`", line)


def _hidden_process(args: list[str], hidden: str, cwd: Path) -> subprocess.CompletedProcess:
    """`python -m robench ARGS` in a fresh process that cannot import `hidden` modules."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HIDE_DIR), str(ROOT)]),
        "ROBENCH_TEST_HIDDEN_MODULES": hidden,
    }
    env.pop("COLUMNS", None)
    return subprocess.run(
        [sys.executable, "-m", "robench", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )


def test_a_fresh_process_without_transformers_refuses_hf_models(tmp_path: Path) -> None:
    args = ["eval", f"hf:{ROOT / 'models' / 'gpt2_bpe_pydocs'}", "-s", "text-smoke"]
    done = _hidden_process([*args, "-o", str(tmp_path / "r.json")], "transformers", tmp_path)
    assert done.returncode == 2, done.stderr
    assert "`pip install 'robench[hf]'`" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_quick_demo_without_hf_and_text_skips_their_sections(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    """The README's by-hand install (no extras): the demo runs every other section to the
    end, exit 0, and says in one line per section what to add."""
    out = tmp_path / "demo"
    done = _hidden_process(["demo", "--quick", "-o", str(out)], "transformers,nltk", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    warned = [line for line in done.stderr.splitlines() if "skipped the section" in line]
    assert len(warned) == 2, done.stderr
    assert any("robench[hf]" in line for line in warned)
    assert any("robench[text]" in line for line in warned)
    assert done.stdout.count("skipped the section") == 2
    assert "vit_nano_elliptical_fmnist" in done.stdout  # the sections that need no extra ran
    assert "segmenter_nano_elliptical_scenes" in done.stdout
    assert not (out / "gpt2-bpe-text.json").exists()
    assert not (out / "baseline-text-classification.json").exists()
    assert (out / "index.html").is_file()
    assert len(done.stderr.splitlines()) <= 60, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 120
