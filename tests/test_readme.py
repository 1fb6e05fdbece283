"""The README's quick-start commands run as written, and its set-up commands exist."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def quickstart_commands() -> list[str]:
    block = re.search(r"<!-- quickstart.*?```bash\n(.*?)```", README, re.S)
    assert block, "README lost its quickstart block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_opens_with_the_two_setup_commands() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first_block
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands[:2] == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.slow
def test_quickstart_commands_run_in_order(tmp_path: Path, fashion_mnist_dir: Path) -> None:
    """The block runs as written in a new shell, from a checkout whose `.venv` make built."""
    commands = quickstart_commands()
    assert commands[0] == "source .venv/bin/activate"
    assert all(shlex.split(command)[0] == "robench" for command in commands[1:])
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))  # the environment running the tests
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"  # nothing of robench's on PATH before activating
    done = subprocess.run(
        ["bash", "-e", "-c", "\n".join(commands)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "runs/quick/report.json").read_text())
    assert report["model"]["architecture"] == "vit_nano_elliptical_patch4_28"
    assert report["model"]["extensions"]["elliptical"]["layers"] == 3
    assert {r["name"] for r in report["results"]} == {"clean", "fgsm", "pgd-5"}


def python_quickstart() -> str:
    block = re.search(r"<!-- python-quickstart.*?```python\n(.*?)```", README, re.S)
    assert block, "README lost its From Python block"
    return block.group(1)


@pytest.mark.slow
def test_the_from_python_block_runs_as_written(tmp_path: Path, fashion_mnist_dir: Path) -> None:
    """The README's "From Python" block, run as a user's script in a fresh interpreter."""
    script = tmp_path / "from_python.py"
    script.write_text(python_quickstart())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    # The tidy frame, the comparison of both models and a gate verdict were printed.
    assert "pgd-5" in done.stdout and "ci_low" in done.stdout
    assert "vit_nano_elliptical_fmnist" in done.stdout and "ResNet" in done.stdout
    assert re.search(r"\b(pass|regressed|inconclusive)\b", done.stdout), done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["from_python.py"], "it wrote files"
