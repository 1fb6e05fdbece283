"""A user's type checker sees robench's public API: mypy, run on user scripts, accepts correct
calls and catches wrong ones (a misspelt keyword, a wrong type). Without the package root's
`if TYPE_CHECKING:` imports every `robench.X` would be `Any` and nothing would be caught.

To cover a new entry point, add a line to GOOD and a wrong call to WRONG.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HEADER = """\
from pathlib import Path

import pandas
import torch

import robench
"""

# Correct calls, as a user writes them: mypy must report nothing.
GOOD = """\
request = robench.EvalRequest(suite="smoke", data=None, out=Path("r.json"), limit=64)
batch: int = request.batch_size
suite = robench.load_suite("smoke")
name: str = suite.suite.name
options: robench.EvalOptions = {"limit": 64, "amp": "bf16", "mean": (0.5,)}
model = torch.nn.Linear(784, 10)
report = robench.evaluate(model, suite="smoke", data="fashion-mnist", limit=64, batch_size=32)
transfer = robench.evaluate("vit_nano_fmnist", surrogate=model, surrogate_name="linear")
frame: pandas.DataFrame = report.to_pandas()
samples: pandas.DataFrame = robench.samples_frame(report)
verdict: bool = robench.gate(baseline=report, candidate=report).passed
"""

# Wrong calls, one per script, and what mypy's error about each must say.
WRONG = [
    (
        'robench.EvalRequest(suite="smoke", data=None, out=Path("r.json"), limmit=64)',
        'Unexpected keyword argument "limmit"',
    ),
    (
        'robench.EvalRequest(suite="smoke", data=None, out=Path("r.json"), batch_size="64")',
        'Argument "batch_size" to "EvalRequest" has incompatible type "str"',
    ),
    ('robench.load_suite(suite="smoke")', 'Unexpected keyword argument "suite"'),
    ('count: int = robench.load_suite("smoke")', "Incompatible types in assignment"),
    (
        'options: robench.EvalOptions = {"batch_sise": 8}',
        'Extra key "batch_sise" for TypedDict "EvalOptions"',
    ),
    ('options: robench.EvalOptions = {"amp": "fp32"}', "Incompatible types"),
    (
        "robench.evaluate(torch.nn.Linear(2, 2), limt=64)",
        'Unexpected keyword argument "limt" for "evaluate"',
    ),
    ('robench.evaluate(torch.nn.Linear(2, 2), batch_size="8")', 'Argument "batch_size"'),
    ('robench.evaluate("vit_nano_fmnist", surrogate=3)', 'Argument "surrogate"'),
    ('robench.evaluate("vit_nano_fmnist").to_pandas(strict=True)', "to_pandas"),
]


def _mypy(scripts: dict[str, str], folder: Path) -> dict[str, list[str]]:
    """Run mypy once on every script; its error lines by script name."""
    for name, body in scripts.items():
        (folder / f"{name}.py").write_text(HEADER + body, encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--follow-imports=silent",  # robench's own modules are checked by `mypy robench`
        "--ignore-missing-imports",
        "--no-error-summary",
        # Warm runs take a second; a cold cache takes a minute (torch's stubs).
        "--cache-dir",
        str(ROOT / ".mypy_cache" / "user-scripts"),
        *(f"{name}.py" for name in scripts),
    ]
    env = {**os.environ, "MYPYPATH": str(ROOT)}  # this checkout's robench, as a user sees it
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 2: mypy itself failed
    errors: dict[str, list[str]] = {name: [] for name in scripts}
    for line in done.stdout.splitlines():
        found = re.match(r"(\w+)\.py:\d+: error: (.*)", line)
        if found:
            errors[found.group(1)].append(found.group(2))
    return errors


@pytest.mark.slow
def test_mypy_accepts_correct_calls_and_catches_wrong_ones(tmp_path: Path) -> None:
    scripts = {"good": GOOD, **{f"wrong_{i}": call + "\n" for i, (call, _) in enumerate(WRONG)}}
    errors = _mypy(scripts, tmp_path)
    assert errors["good"] == []
    for i, (call, expected) in enumerate(WRONG):
        assert any(expected in error for error in errors[f"wrong_{i}"]), (call, errors)


def test_the_package_is_marked_typed() -> None:
    # PEP 561: without it, mypy treats an installed robench as untyped.
    assert (ROOT / "robench" / "py.typed").is_file()
