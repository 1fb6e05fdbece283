"""Hostile numbers on `robench train` and `robench eval`: one sentence, exit 2, nothing written.

`--batch-size 0` once trained forever (it read as "the default") and left its output folder
behind; every numeric option is now checked against
`robench/evaluation/options/ranges.py` first (robench/cli/_option_table.py `with_options`).
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robench.cli import app
from robench.cli.eval import eval_command
from robench.cli.train import train_command
from robench.evaluation.options.ranges import OPTION_RANGES, Range, flag_of

TRAIN = ["train", "vit_nano_patch4_28", "-o", "tr"]
TRAIN_LM = ["train", "transformer_lm_nano", "-o", "tr"]
EVAL = ["eval", "vit_nano_fmnist", "-o", "r.json"]

HOSTILE = [
    (TRAIN, ["--batch-size", "0"]),
    (TRAIN, ["--batch-size", "-1"]),
    (TRAIN, ["-b", "99999999999999999999"]),
    (TRAIN, ["--epochs", "0"]),
    (TRAIN, ["--epochs", "-1"]),
    (TRAIN, ["--epochs", "nan"]),
    (TRAIN, ["--epochs", "inf"]),
    (TRAIN, ["--max-steps", "0"]),
    (TRAIN, ["--max-steps", "-5"]),
    (TRAIN, ["--lr", "0"]),
    (TRAIN, ["--lr", "-0.001"]),
    (TRAIN, ["--lr", "nan"]),
    (TRAIN, ["--weight-decay", "-1"]),
    (TRAIN, ["--warmup-steps", "-1"]),
    (TRAIN, ["--label-smoothing", "1"]),
    (TRAIN, ["--label-smoothing", "-0.1"]),
    (TRAIN, ["--clip-grad", "-1"]),
    (TRAIN, ["--seed", "-1"]),
    (TRAIN, ["--seed", str(2**64)]),
    (TRAIN, ["--train-limit", "0"]),
    (TRAIN, ["--val-limit", "-1"]),
    (TRAIN, ["--val-every", "0"]),
    (TRAIN, ["--workers", "-1"]),
    (TRAIN, ["--eps", "0", "--adversarial", "pgd"]),
    (TRAIN, ["--eps", "nan", "--adversarial", "pgd"]),
    (TRAIN, ["--steps", "0", "--adversarial", "pgd", "--eps", "0.1"]),
    (TRAIN, ["--step-size", "-0.01", "--adversarial", "pgd", "--eps", "0.1"]),
    (TRAIN, ["--beta", "0", "--adversarial", "trades", "--eps", "0.1"]),
    (TRAIN_LM, ["--target-length", "0"]),
    (TRAIN_LM, ["--target-length", "-256"]),
    (TRAIN_LM, ["--vocab-min-count", "0"]),
    (TRAIN_LM, ["--vocab-size", "1"]),
    (TRAIN_LM, ["--batch-size", "0"]),
    (EVAL, ["--batch-size", "0"]),
    (EVAL, ["-b", "-64"]),
    (EVAL, ["--limit", "0"]),
    (EVAL, ["--limit", "-3"]),
    (EVAL, ["--workers", "-2"]),
    (EVAL, ["--seed", "-1"]),
    (EVAL, ["--num-classes", "0"]),
    (EVAL, ["--num-classes", "-10"]),
    (EVAL, ["--crop-pct", "0"]),
    (EVAL, ["--crop-pct", "1.5"]),
    (EVAL, ["--crop-pct", "nan"]),
    (EVAL, ["--target-length", "0"]),
    (EVAL, ["--context", "-1"]),
    (EVAL, ["--sanity-eps", "0"]),
    (EVAL, ["--sanity-eps", "-1/255"]),
    (EVAL, ["--std", "0,0.5,0.5"]),
    (EVAL, ["--std", "-1"]),
    (EVAL, ["--input-size", "1,28,0"]),
    (EVAL, ["--input-size", "1,28,100000"]),
]


@pytest.mark.parametrize(("command", "option"), HOSTILE, ids=lambda v: " ".join(v))
def test_an_out_of_range_number_is_one_sentence_exit_2_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], option: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, [*command, *option])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert option[0] in lines[0] and "e.g." in lines[0]
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def _numeric_flags(function: Callable[..., object]) -> set[str]:
    """Every option of a command function that typer parses as a number (int or float)."""
    flags = set()
    for name, hint in typing.get_type_hints(function, include_extras=True).items():
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        base, *metadata = typing.get_args(hint)
        types = set(typing.get_args(base)) - {type(None)} or {base}
        if not types <= {int, float}:
            continue
        declared = [d for m in metadata for d in getattr(m, "param_decls", ()) or ()]
        flags.add(max((d for d in declared if d.startswith("--")), default=flag_of(name)))
    return flags


@pytest.mark.parametrize("function", [train_command, eval_command], ids=["train", "eval"])
def test_every_numeric_option_has_a_range(function: Callable[..., object]) -> None:
    flags = _numeric_flags(function)
    assert {"--batch-size", "--seed"} <= flags
    # eval's --workers also takes `auto` (text), its count checked against the same range.
    assert ("--workers" in flags) is (function is train_command)
    assert flags - set(OPTION_RANGES) == set()


def test_ranges_read_as_written() -> None:
    assert 0 not in OPTION_RANGES["--batch-size"] and 1 in OPTION_RANGES["--batch-size"]
    assert float("nan") not in Range() and float("inf") not in Range()
    assert 1.0 in OPTION_RANGES["--crop-pct"] and 0.0 not in OPTION_RANGES["--crop-pct"]
    assert OPTION_RANGES["--label-smoothing"].describe() == ">= 0 and < 1"


@pytest.mark.slow
def test_a_training_subset_smaller_than_a_batch_is_refused_not_looped_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, [*TRAIN, "--train-limit", "5", "--max-steps", "1"])
    assert result.exit_code == 2, result.output
    assert "no full batch of 128" in result.stderr
    assert list(tmp_path.iterdir()) == []
