"""Language modelling end to end from the CLI: train a nano model on the built-in text,
evaluate it clean and under Word Swap, compare, gate, resume; and the errors a user meets."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from robench.cli import app
from robench.models.checkpoints import read_checkpoint, save_safetensors
from robench.results.report.schema import SCHEMA_VERSION, read_report, report_json_schema

TRAIN = [
    "train",
    "transformer_lm_nano",
    "--data",
    "pydoc-topics",
    "--batch-size",
    "8",
    "--target-length",
    "64",
    "--lr",
    "2e-3",
    "--warmup-steps",
    "5",
    "--val-limit",
    "20",
    "--extra-word",
    "AAA",
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A briefly trained nano model and a barely trained one (clearly worse)."""
    root = tmp_path_factory.mktemp("lm")
    runner = CliRunner()
    out = {}
    for name, steps in (("good", 40), ("bad", 4)):
        args = [
            *TRAIN,
            "--max-steps",
            str(steps),
            "--val-every",
            str(steps),
            "-o",
            str(root / name),
        ]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "best validation perplexity" in result.output
        out[name] = root / name / "best.safetensors"
    return out


def _eval(runner: CliRunner, ckpt: Path, out: Path, *extra: str):
    args = ["eval", "-c", str(ckpt), "-s", "text-smoke", "--data", "pydoc-topics"]
    return runner.invoke(app, [*args, "--limit", "60", "-b", "16", "-o", str(out), *extra])


@pytest.fixture(scope="module")
def reports(models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reports")
    runner = CliRunner()
    out = {}
    for name, ckpt in models.items():
        result = _eval(runner, ckpt, root / f"{name}.json")
        assert result.exit_code == 0, result.output
        out[name] = root / f"{name}.json"
    return out


def test_the_checkpoint_carries_its_vocabulary(models: dict[str, Path]) -> None:
    from robench.data.text import Vocabulary

    vocabulary = Vocabulary.from_metadata(read_checkpoint(models["good"]).metadata)
    assert (
        vocabulary is not None
        and "AAA" in vocabulary
        and vocabulary.words[:2]
        == (
            "<eos>",
            "<unk>",
        )
    )


def test_eval_writes_a_schema_valid_report_where_word_swap_raises_perplexity(
    reports: dict[str, Path],
) -> None:
    raw = json.loads(reports["good"].read_text())
    jsonschema.validate(raw, report_json_schema())
    assert raw["schema_version"] == SCHEMA_VERSION and raw["task"] == "language-modeling"
    results = {r["name"]: r for r in raw["results"]}
    clean, swapped = results["clean"], results["word-swap-2.5"]
    for metric in ("perplexity", "word_perplexity", "bits_per_byte"):
        low, high = clean["metrics"][metric]["ci95"]
        assert low < clean["metrics"][metric]["value"] < high
        assert clean["metrics"][metric]["higher_is_better"] is False
    assert swapped["metrics"]["perplexity"]["value"] > clean["metrics"]["perplexity"]["value"]
    realised = swapped["params"]["realised"]
    assert realised["token_in_vocabulary"] is True and realised["swapped_words"] > 0
    assert abs(realised["realised_rate"] - 0.025) < 0.005
    corpus = raw["datasets"]["default"]["corpus"]
    assert corpus["target_length"] == 64 and corpus["layout"] == "pydoc-topics"
    assert raw["model"]["extensions"]["language_model"]["m_estimator"] is None
    assert raw["model"]["extensions"]["vocabulary"]["size"] == corpus["vocabulary_size"]
    # Per-window records: one (NLL, tokens) pair per window, paired across results.
    pairs = raw["samples"]["default"]["values"]["clean"]["perplexity"]
    assert len(pairs) == 60 and all(len(p) == 2 and p[1] > 0 for p in pairs)
    assert raw["samples"]["default"]["targets"] == [p[1] for p in pairs]  # scored tokens


def test_compare_bolds_the_lower_perplexity(reports: dict[str, Path]) -> None:
    result = CliRunner().invoke(
        app, ["compare", str(reports["bad"]), str(reports["good"]), "--format", "csv"]
    )
    assert result.exit_code == 0, result.output
    good = read_report(reports["good"])
    best = good.results[0].metrics["perplexity"].value
    rows = result.output.strip().splitlines()
    assert "perplexity" in rows[0] or "PPL" in rows[0]
    md = CliRunner().invoke(
        app, ["compare", str(reports["bad"]), str(reports["good"]), "--format", "markdown"]
    )
    assert f"**{best:.2f}**" in md.output  # lower is better: the good model is bold


def test_gate_fails_a_clearly_worse_candidate_and_passes_an_identical_one(
    reports: dict[str, Path],
) -> None:
    runner = CliRunner()
    # Wide enough for the table with the test column (a narrow pipe drops it, tables.py).
    worse = runner.invoke(
        app,
        ["gate", "--baseline", str(reports["good"]), "--candidate", str(reports["bad"])],
        env={"COLUMNS": "200"},
    )
    assert worse.exit_code == 1, worse.output
    assert "paired bootstrap" in worse.output
    same = runner.invoke(
        app, ["gate", "--baseline", str(reports["good"]), "--candidate", str(reports["good"])]
    )
    assert same.exit_code == 0, same.output


def test_resume_after_an_interruption_gives_the_same_report(
    models: dict[str, Path], reports: dict[str, Path], tmp_path: Path
) -> None:
    runner = CliRunner()
    out = tmp_path / "r.json"
    assert _eval(runner, models["good"], out).exit_code == 0
    samples = out.with_name("r.samples.jsonl")
    lines = samples.read_text().splitlines()
    samples.write_text("\n".join(lines[:3]) + "\n")  # header + 2 batches: an interrupted run
    out.unlink()
    result = _eval(runner, models["good"], out, "--resume")
    assert result.exit_code == 0, result.output
    first, again = read_report(reports["good"]), read_report(out)
    for a, b in zip(first.results, again.results, strict=True):
        assert {k: v.value for k, v in a.metrics.items()} == {
            k: v.value for k, v in b.metrics.items()
        }
    assert first.samples == again.samples


def test_batch_size_does_not_change_word_swap_or_perplexity(
    models: dict[str, Path], reports: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "b5.json"
    result = _eval(CliRunner(), models["good"], out, "-b", "5")
    assert result.exit_code == 0, result.output
    first, again = read_report(reports["good"]), read_report(out)
    for a, b in zip(first.results, again.results, strict=True):
        assert a.params == b.params
        for name in a.metrics:
            assert b.metrics[name].value == pytest.approx(a.metrics[name].value, rel=1e-6)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-s", "smoke", "--data", "pydoc-topics"], "pick a suite for language-modeling"),
        (["-s", "text-smoke", "--data", "fashion-mnist"], "not a text corpus"),
        (["-s", "text-smoke", "--target-length", "0"], "--target-length 0 is out of range"),
    ],
)
def test_mismatches_are_one_line_errors(
    models: dict[str, Path], tmp_path: Path, args: list[str], expected: str
) -> None:
    base = ["eval", "-c", str(models["good"]), "-o", str(tmp_path / "r.json")]
    result = CliRunner().invoke(app, [*base, *args])
    assert result.exit_code == 2, result.output
    assert expected in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r.json").exists()


def test_a_checkpoint_whose_vocabulary_does_not_match_its_weights_is_refused(
    models: dict[str, Path], tmp_path: Path
) -> None:
    from robench.data.text import Vocabulary

    ckpt = read_checkpoint(models["good"])
    vocabulary = Vocabulary.from_metadata(ckpt.metadata)
    assert vocabulary is not None
    other = Vocabulary((*vocabulary.words, "extra-word"))
    metadata = {**ckpt.metadata, **other.to_metadata()}
    bad = tmp_path / "mismatch.safetensors"
    save_safetensors(ckpt.state_dict, bad, metadata)
    result = CliRunner().invoke(
        app, ["eval", "-c", str(bad), "-s", "text-smoke", "-o", str(tmp_path / "r.json")]
    )
    assert result.exit_code == 2, result.output
    assert "vocabulary" in result.output or "does not fit" in result.output
    no_vocab = tmp_path / "no-vocab.safetensors"
    save_safetensors(
        ckpt.state_dict, no_vocab, {k: v for k, v in ckpt.metadata.items() if "vocab" not in k}
    )
    result = CliRunner().invoke(
        app, ["eval", "-c", str(no_vocab), "-s", "text-smoke", "-o", str(tmp_path / "r.json")]
    )
    assert result.exit_code == 2 and "carries no vocabulary" in result.output


def test_torchrun_shards_windows_and_writes_the_same_report(
    models: dict[str, Path], reports: dict[str, Path], tmp_path: Path
) -> None:
    """Two gloo processes share the batches of windows; rank 0's report equals one process's
    (same per-window NLL, same swapped text)."""
    import os
    import subprocess
    import sys

    out = tmp_path / "sharded.json"
    torchrun = Path(sys.executable).with_name("torchrun")
    done = subprocess.run(
        [str(torchrun), "--nproc_per_node=2", "-m", "robench", "eval", "-c", str(models["good"]),
         "-s", "text-smoke", "--data", "pydoc-topics", "--limit", "60", "-b", "16",
         "-o", str(out), "--format", "json"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    single, sharded = read_report(reports["good"]), read_report(out)
    assert (tmp_path / "sharded.samples.rank1.jsonl").exists()
    assert sharded.samples["default"].indices == single.samples["default"].indices
    for a, b in zip(single.results, sharded.results, strict=True):
        assert a.params == b.params
        for name in a.metrics:
            assert b.metrics[name].value == pytest.approx(a.metrics[name].value, rel=1e-6)
