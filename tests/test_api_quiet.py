"""`robench.evaluate` is quiet where nothing is wrong and says `warning:` where something is:
no third-party warnings in a notebook without ipywidgets, and robench's own warnings keep the
prefix the CLI gives them when the caller set up no logging."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import rich.console

from robench.api import _progress

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        timeout=300,
    )


def test_importing_the_api_in_a_notebook_without_ipywidgets_warns_nothing() -> None:
    """tqdm.autonotebook, imported through timm's huggingface_hub, warns "IProgress not found"
    in a Jupyter kernel without ipywidgets; the kernel is stood in for by its module's name."""
    pytest.importorskip("IPython")
    code = (
        "import sys, types, warnings\nimport IPython\n"
        "sys.modules['ipykernel.zmqshell'] = types.ModuleType('ipykernel.zmqshell')\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    import robench.api\n"
        "print([str(w.message) for w in caught])\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert "IProgress" not in done.stdout
    assert done.stdout.strip() == "[]"


def test_a_notebook_without_ipywidgets_gets_log_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    def jupyter(**options: object) -> rich.console.Console:
        return rich.console.Console(force_jupyter=True, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(_progress, "Console", jupyter)
    monkeypatch.setattr(_progress, "find_spec", lambda name: None)
    assert isinstance(_progress.make_progress(True), _progress.LogProgress)
    monkeypatch.setattr(_progress, "find_spec", lambda name: object())
    assert not isinstance(_progress.make_progress(True), _progress.LogProgress)


_WARN = (
    "import logging\n{setup}\nfrom robench.api._logging import prefixed_warnings\n"
    "with prefixed_warnings():\n"
    "    logging.getLogger('robench.evaluation.x').warning('pgd-5 had not converged')\n"
    "    logging.getLogger('robench.evaluation.x').info('not shown')\n"
    "logging.getLogger('robench.evaluation.x').warning('after the call')\n"
)


def test_warnings_keep_their_prefix_when_the_caller_set_up_no_logging() -> None:
    done = _python(_WARN.format(setup=""))
    lines = done.stderr.splitlines()
    assert lines[0] == "warning: pgd-5 had not converged"
    assert "not shown" not in done.stderr
    assert lines[1] == "after the call"  # Python's own last resort again, outside the call


def test_a_caller_s_logging_set_up_is_left_alone() -> None:
    done = _python(_WARN.format(setup="logging.basicConfig(level=logging.INFO)"))
    assert "WARNING:robench.evaluation.x:pgd-5 had not converged" in done.stderr
    assert "INFO:robench.evaluation.x:not shown" in done.stderr
    assert "warning: pgd-5" not in done.stderr


def test_evaluate_runs_inside_prefixed_warnings() -> None:
    """A wrong name: the InputError is raised from within the call; the handler is gone after."""
    code = (
        "import logging, robench.api\n"
        "try:\n    robench.api.evaluate('vit_nano_fmnist', suite='smok')\n"
        "except robench.api.InputError as exc:\n    print('raised', exc)\n"
        "print(logging.getLogger('robench').handlers)\n"
    )
    done = _python(code)
    assert "raised Unknown suite 'smok'" in done.stdout
    assert done.stdout.strip().endswith("[]")
