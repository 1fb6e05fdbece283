"""The Python API's examples run as a user runs them: the notebook in a real Jupyter kernel
(nbclient + ipykernel, as `jupyter nbconvert --execute` would), the training-loop script as a
program. Outputs are not committed; these tests are what keeps the examples working."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "robustness_in_a_notebook.ipynb"
TRAINING_LOOP = ROOT / "examples" / "train_with_robustness_checks.py"


def test_the_notebook_is_committed_without_outputs() -> None:
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


@pytest.mark.slow
def test_the_notebook_runs_in_a_real_kernel(tmp_path: Path, fashion_mnist_dir: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    )
    client.execute()  # raises CellExecutionError on any failing cell
    outputs = [out for cell in notebook.cells for out in cell.get("outputs", [])]
    text = "\n".join(
        out.get("text", "") + str(out.get("data", {}).get("text/plain", "")) for out in outputs
    )
    # Training went on in memory, the report rendered as HTML, a figure was drawn, the
    # comparison names both models and the gate gave a verdict.
    assert re.search(r"epoch 1: loss \d", text)
    assert any("text/html" in out.get("data", {}) for out in outputs)
    assert any("image/png" in out.get("data", {}) for out in outputs)
    assert "vit_nano_elliptical_fmnist" in text and "my-cnn" in text
    assert re.search(r"passed: (True|False)", text)
    assert list(tmp_path.iterdir()) == [], "the notebook wrote files without out="


@pytest.mark.slow
def test_the_training_loop_logs_robustness_and_keeps_training(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(TRAINING_LOOP), "--steps", "20", "--every", "10", "--out", "checks"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = re.findall(
        r"step (\d+)  loss [\d.]+  top-1: clean ([\d.]+)%  fgsm ([\d.]+)%", done.stderr
    )
    assert [int(step) for step, *_ in lines] == [10, 20], done.stderr
    for _, clean, fgsm in lines:
        assert 0 <= float(fgsm) <= 100 and 0 < float(clean) <= 100
    # --out keeps one report per check, readable by the CLI's compare.
    written = sorted(p.name for p in (tmp_path / "checks").iterdir())
    assert written == [
        "step-10.json",
        "step-10.samples.jsonl",
        "step-20.json",
        "step-20.samples.jsonl",
    ]
    compared = subprocess.run(
        [
            sys.executable,
            "-m",
            "robench",
            "compare",
            "checks/step-10.json",
            "checks/step-20.json",
            "--format",
            "csv",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert compared.returncode == 0, compared.stderr
    assert "small-cnn@10" in compared.stdout and "small-cnn@20" in compared.stdout
