"""`robench generate`: the written layouts, their paths on stdout, and refusals that leave
nothing behind."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from robench.cli import app
from robench.data.lra import open_lra
from tests.hostile import refused


def test_generate_listops_writes_lras_three_files(tmp_path: Path) -> None:
    out = tmp_path / "listops"
    args = ["generate", "lra-listops", str(out), "--train", "20", "--val", "4", "--test", "6"]
    result = CliRunner().invoke(app, [*args, "--min-length", "10", "--max-length", "100"])
    assert result.exit_code == 0, result.output
    names = ["basic_train.tsv", "basic_val.tsv", "basic_test.tsv"]
    assert result.stdout.split() == [str(out / name) for name in names]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["listops"]  # no staging folder left
    assert [len(open_lra(out, "listops", s)) for s in ("train", "val", "test")] == [20, 4, 6]
    again = tmp_path / "again"
    CliRunner().invoke(
        app, [*args[:2], str(again), *args[3:], "--min-length", "10", "--max-length", "100"]
    )
    assert (again / "basic_test.tsv").read_bytes() == (out / "basic_test.tsv").read_bytes()


def test_generate_pathfinder_writes_each_difficulty(tmp_path: Path) -> None:
    out = tmp_path / "pathfinder32"
    args = ["generate", "lra-pathfinder", str(out), "--n", "10", "--seed", "4"]
    result = CliRunner().invoke(app, [*args, "--difficulty", "curv_baseline"])
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == [str(out / "curv_baseline")]
    dataset = open_lra(out, "pathfinder", "train")
    assert len(dataset) == 8 and dataset.max_length == 1024


def test_generate_refuses_a_folder_with_files(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    refused(["generate", "lra-listops", tmp_path / "out"], tmp_path, "is not an empty folder")


def test_generate_refuses_options_of_the_other_dataset(tmp_path: Path) -> None:
    refused(
        ["generate", "lra-pathfinder", tmp_path / "out", "--train", "5"],
        tmp_path,
        "--train applies to lra-listops only",
    )


def test_generate_refuses_impossible_listops_before_writing(tmp_path: Path) -> None:
    args = ["generate", "lra-listops", tmp_path / "out", "--max-depth", "2", "--min-length", "50"]
    refused(args, tmp_path, "at most 12 tokens long")


def test_a_failure_while_writing_leaves_nothing(tmp_path: Path) -> None:
    # Length 4 (an operator over 2 digits) admits 400 expressions: asking for more fails
    # once the staging folder exists.
    args = ["generate", "lra-listops", tmp_path / "out", "--max-depth", "2", "--max-args", "2"]
    args += ["--min-length", "3", "--max-length", "5", "--train", "5000"]
    refused(args, tmp_path, "distinct ListOps expressions")
