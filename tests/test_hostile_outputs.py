"""Outputs that are inputs: gate, compare and train refuse to write over what they read
(issue 39: `gate --sequential -c base.json` replaced the baseline by the candidate)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hostile import refused
from report_factory import make_report, write


@pytest.fixture()
def reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """base.json and cand.json in the working directory, with a symlink and a hard link to the
    baseline."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base = write(make_report("base", {"clean": 0.8}, n=200), tmp_path / "base.json")
    write(make_report("cand", {"clean": 0.8}, n=200), tmp_path / "cand.json")
    (tmp_path / "link.json").symlink_to(base)
    os.link(base, tmp_path / "hard.json")
    return tmp_path


SEQUENTIAL = ["--sequential", "--candidate-model", "vit_nano_fmnist"]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ([*SEQUENTIAL, "-c", "base.json"], "--candidate base.json is --baseline base.json"),
        ([*SEQUENTIAL, "-c", "./link.json"], "--candidate link.json is --baseline base.json"),
        ([*SEQUENTIAL, "-c", "hard.json"], "--candidate hard.json is --baseline base.json"),
        ([*SEQUENTIAL, "-c", "c.json", "--summary", "c.samples.jsonl"], "pass a different"),
        ([*SEQUENTIAL, "--summary", "base.json"], "--summary base.json is --baseline"),
        (["-c", "cand.json", "--summary", "cand.json"], "--summary cand.json is --candidate"),
        (["-c", "cand.json", "--junit", "hard.json"], "--junit hard.json is --baseline"),
        (["-c", "cand.json", "--json", "link.json"], "--json link.json is --baseline"),
        (["-c", "cand.json", "--json", "g", "--summary", "g"], "--summary g and --json g"),
        (["-c", "cand.json", "--output", "junit=link.json"], "--output link.json is --baseline"),
        (["-c", "cand.json", "-o", "json=./cand.json"], "--output cand.json is --candidate"),
        (["-c", "cand.json", "--summary", "g", "-o", "json=g"], "--summary g and --output g"),
        ([*SEQUENTIAL, "-o", "summary=base.json"], "--output base.json is --baseline"),
        (["-c", "cand.json", "--policy", "cand.json", "--summary", "cand.json"], "--summary"),
    ],
)
def test_gate_never_writes_over_what_it_reads(
    reports: Path, extra: list[str], expected: str
) -> None:
    line = refused(["gate", "-b", "base.json", *extra], reports, expected)
    assert "pass a" in line


def test_gate_refuses_a_step_summary_that_is_the_baseline(
    reports: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(reports / "base.json"))
    refused(["gate", "-b", "base.json", "-c", "cand.json"], reports, "$GITHUB_STEP_SUMMARY")


@pytest.mark.parametrize("output", ["base.json", "hard.json", "link.json"])
def test_compare_never_writes_over_a_report(reports: Path, output: str) -> None:
    args = ["compare", "base.json", "cand.json", "--format", "markdown", "-o", output]
    refused(args, reports, f"--output {output} is REPORT base.json", "pass another --output")


def test_compare_never_writes_over_its_reference(reports: Path) -> None:
    args = ["compare", "cand.json", "-r", "base.json", "-f", "csv", "-o", "hard.json"]
    refused(args, reports, "is --reference base.json")


def test_train_never_writes_over_the_checkpoint_it_starts_from(reports: Path) -> None:
    start = reports / "lm" / "best.safetensors"
    start.parent.mkdir()
    start.write_bytes(b"weights of a pretrained language model")
    args = ["train", "switch_classifier_nano", "--init-from", start, "-o", start.parent]
    refused(args, reports, f"--out-dir {start} is --init-from {start}", "pass another --out-dir")


def test_train_never_writes_over_its_model_cards_checkpoint(reports: Path) -> None:
    (reports / "runs").mkdir()
    (reports / "runs" / "best.safetensors").write_bytes(b"the card's weights")
    card = reports / "runs" / "card.toml"
    card.write_text(
        'name = "mine"\narchitecture = "transformer_lm_nano"\ncheckpoint = "best.safetensors"\n',
        encoding="utf-8",
    )
    refused(["train", card, "-o", "runs"], reports, "is the checkpoint of")
