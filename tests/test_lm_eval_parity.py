"""Parity with lm-evaluation-harness 0.4.13: same local model, same documents, same numbers.

lm-eval (`--model hf`, a local JSON-lines `loglikelihood_rolling` task) is the oracle: its
word perplexity, byte perplexity and bits per byte must equal robench's within 1e-4
relative. The model is a tiny GPT-2 with its own byte-level BPE tokenizer built here
(tests/tiny_causal_lm.py), with documents longer than its 32-token context so that the
rolling windows, the prefix token and the last window's extra context are all exercised.
lm-eval is the test-only extra `robench[lmeval]` (installed by `make install`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robench.cli import app

pytest.importorskip("transformers", reason="the optional extra robench[hf] (transformers)")
pytest.importorskip(
    "lm_eval",
    reason="lm-evaluation-harness is not installed: pip install -e '.[lmeval]' (the oracle)",
)

from tests.tiny_causal_lm import build_tiny_causal_lm, write_documents

METRICS = ("word_perplexity", "byte_perplexity", "bits_per_byte")
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SUITE = """\
name = "lm-eval-parity"
version = 1
task = "language-modeling"
description = "Clean perplexities of documents, as lm-evaluation-harness reports them"
metrics = ["perplexity", "word_perplexity", "byte_perplexity", "bits_per_byte"]

[[perturbations]]
kind = "clean"
"""


def _lm_eval(folder: Path, data: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """lm-eval's metrics of the task over `data`, run in-process, offline."""
    for name, value in {
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_DATASETS_CACHE": str(work / "datasets-cache"),
        "TOKENIZERS_PARALLELISM": "false",
    }.items():
        monkeypatch.setenv(name, value)
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the task is benchmarks/lm_eval_task.py's
    from lm_eval_task import write_task

    tasks = work / "tasks"
    write_task(tasks, "robench_parity", data)
    results = simple_evaluate(
        model="hf",
        model_args=f"pretrained={folder}",
        tasks=["robench_parity"],
        batch_size=4,
        device="cpu",
        task_manager=TaskManager(include_path=str(tasks)),
    )
    assert results is not None
    row = results["results"]["robench_parity"]
    return {metric: row[f"{metric},none"] for metric in METRICS}


@pytest.mark.slow
def test_robench_equals_lm_eval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = build_tiny_causal_lm(tmp_path / "model")
    data = tmp_path / "docs.jsonl"
    write_documents(data, n=6)
    suite = tmp_path / "parity.toml"
    suite.write_text(SUITE)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app, ["eval", f"hf:{folder}", "-s", str(suite), "--data", str(data), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    clean = next(r for r in json.loads(out.read_text())["results"] if r["name"] == "clean")
    ours = {metric: clean["metrics"][metric]["value"] for metric in METRICS}
    theirs = _lm_eval(folder, data, tmp_path, monkeypatch)
    print("robench:", ours, "\nlm-eval:", theirs)
    for metric in METRICS:
        assert ours[metric] == pytest.approx(theirs[metric], rel=1e-4), metric
