"""The CLI through typer's CliRunner: exit codes, stdout vs stderr, one-line errors."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from robench.cli import app


@pytest.fixture()
def runner() -> CliRunner:
    return CliRunner()


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_help_lists_commands_and_exit_codes(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("eval", "list", "validate", "schema", "train", "demo"):
        assert command in result.stdout


def test_help_shows_each_summary_which_is_its_commands_first_paragraph(
    runner: CliRunner,
) -> None:
    # The root help reads the summaries from the table, not from the command modules; this
    # keeps the two in step.
    import importlib

    from robench.cli._commands import COMMANDS
    from robench.cli._lazy import reflowed_help

    result = runner.invoke(app, ["--help"], env={"COLUMNS": "300"})
    for name, spec in COMMANDS.items():
        function = getattr(importlib.import_module(spec.module), spec.function)
        assert reflowed_help(function.__doc__).split("\n\n")[0] == spec.summary, name
        assert spec.summary in result.stdout


def test_no_arguments_print_the_help_once_and_exit_2(runner: CliRunner) -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 2
    assert result.stdout.count("Usage:") == 1


def test_a_mistyped_command_gets_a_suggestion(runner: CliRunner) -> None:
    result = runner.invoke(app, ["compre"])
    assert result.exit_code == 2
    assert "Did you mean 'compare'?" in _one_error_line(result.stderr)


def test_a_second_report_given_to_gate_without_c_says_how_to_give_it(
    runner: CliRunner,
) -> None:
    """`robench gate -b BASE NEW` (as `compare A B` reads two reports) names --candidate."""
    result = runner.invoke(app, ["gate", "-b", "base.json", "new.json"])
    assert result.exit_code == 2
    line = _one_error_line(result.stderr)
    assert "(new.json)" in line and "--candidate (-c) PATH" in line
    assert line.endswith("see `robench gate --help`.")
    other = runner.invoke(app, ["eval", "--no-such-flag"])
    assert other.exit_code == 2 and "--candidate" not in other.stderr


def test_eval_help_ends_with_examples(runner: CliRunner) -> None:
    result = runner.invoke(app, ["eval", "--help"])
    assert result.exit_code == 0
    assert "Examples" in result.stdout and "robench eval" in result.stdout


def test_list_models_shows_robench_models(runner: CliRunner) -> None:
    result = runner.invoke(app, ["list", "models", "*elliptical*"])
    assert result.exit_code == 0
    names = {line.split("\t")[0] for line in result.stdout.splitlines()}
    assert {"deit_tiny_elliptical_patch16_224", "vit_nano_elliptical_patch4_28"} <= names
    assert "resnet18" not in names


@pytest.mark.parametrize("args", [["list", "suites"], ["list", "perturbations"]])
def test_a_reader_that_closed_stdout_ends_the_command_quietly(args: list[str]) -> None:
    """`robench list suites | head -2` once ended in "unexpected BrokenPipeError", exit 3."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout now fails with EPIPE, as after `head` exits
    try:
        done = subprocess.run(
            [sys.executable, "-m", "robench", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


def test_a_list_filter_that_matches_nothing_says_so(runner: CliRunner) -> None:
    result = runner.invoke(app, ["list", "models", "zzz*"])
    assert result.exit_code == 0 and result.stdout == ""
    assert "no models match 'zzz*'; `robench list models` shows them all." in result.stderr


def test_list_perturbations_shows_every_kind_with_parameters(runner: CliRunner) -> None:
    result = runner.invoke(app, ["list", "perturbations"])
    assert result.exit_code == 0
    kinds = {line.split("\t")[0] for line in result.stdout.splitlines()}
    assert {"clean", "fgsm", "pgd", "spsa", "autoattack"} <= kinds
    assert "steps" in result.stdout


def test_validate_checks_all_shipped_files(runner: CliRunner) -> None:
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 0, result.stderr
    assert "paper-adversarial" in result.stdout


def test_validate_reports_a_bad_file_with_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nversion = 1\n[[perturbations]]\nkind = "fgsm"\n')
    result = runner.invoke(app, ["validate", str(bad)])
    assert result.exit_code == 2
    assert "eps" in result.stderr


_CHECKPOINT_BYTES = b"not really a checkpoint"
_CHECKPOINT_SHA = hashlib.sha256(_CHECKPOINT_BYTES).hexdigest()


def _card(tmp_path: Path, body: str, architecture: str | None = "vit_nano_patch4_28") -> Path:
    """A card in a `models/` folder beside a small checkpoint file `w.safetensors`."""
    folder = tmp_path / "models"
    folder.mkdir(exist_ok=True)
    (folder / "w.safetensors").write_bytes(_CHECKPOINT_BYTES)
    card = folder / "card.toml"
    head = (
        f'name = "card"\narchitecture = "{architecture}"\n' if architecture else 'name = "card"\n'
    )
    card.write_text(head + body, encoding="utf-8")
    return card


def _flat(text: str) -> str:
    """Rich wraps stderr at the console width; compare text with whitespace collapsed."""
    return " ".join(text.split())


def test_validate_zoo_names_are_what_the_zoo_registers() -> None:
    """validate checks architectures against a torch-free list; it must match timm's registry."""
    from robench.models.zoo import list_robench_models
    from robench.models.zoo_names import ZOO_MODELS

    assert list(ZOO_MODELS) == list_robench_models()


def test_validate_a_good_card_checks_its_checkpoint_hash(runner: CliRunner, tmp_path: Path) -> None:
    card = _card(
        tmp_path, f'checkpoint = "w.safetensors"\ncheckpoint_sha256 = "{_CHECKPOINT_SHA}"\n'
    )
    result = runner.invoke(app, ["validate", str(card)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"ok   {card}: model card card: vit_nano_patch4_28\n1 file(s) valid\n"
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("body", "architecture", "message"),
    [
        ('checkpoint = "missing.safetensors"\n', "vit_nano_patch4_28", "does not exist"),
        (
            f'checkpoint = "w.safetensors"\ncheckpoint_sha256 = "{"0" * 64}"\n',
            "vit_nano_patch4_28",
            f"has sha256 {_CHECKPOINT_SHA[:12]}..., but the card expects 000000000000...",
        ),
        (
            'checkpoint = "w.safetensors"\ncheckpoint_sha256 = "ABC"\n',
            "vit_nano_patch4_28",
            "checkpoint_sha256: String should match pattern",
        ),
        (f'checkpoint_sha256 = "{"0" * 64}"\n', "vit_nano_patch4_28", "but no checkpoint"),
        ("", None, "names no architecture"),
        ("input_size = [1, 28, 28]\nmean = [0.5, 0.5, 0.5]\n", "vit_nano_patch4_28", "disagree"),
        ("mean = [0.5]\nstd = [0.0]\n", "vit_nano_patch4_28", "must be positive"),
        ('checkpont = "w.safetensors"\n', "vit_nano_patch4_28", "checkpont: Extra inputs"),
    ],
    ids=[
        "missing checkpoint",
        "wrong hash",
        "malformed hash",
        "hash without checkpoint",
        "no architecture",
        "channels disagree",
        "zero std",
        "unknown field",
    ],
)
def test_validate_a_bad_card_fails_with_exit_2(
    runner: CliRunner, tmp_path: Path, body: str, architecture: str | None, message: str
) -> None:
    card = _card(tmp_path, body, architecture)
    result = runner.invoke(app, ["validate", str(card)])
    assert result.exit_code == 2, result.stdout
    assert result.stdout == ""
    stderr = _flat(result.stderr)
    assert stderr.startswith("fail model card") and str(card) in stderr, stderr
    assert message in stderr, stderr
    assert "Traceback" not in result.output


def test_validate_notes_an_architecture_outside_robench_unless_deep(
    runner: CliRunner, tmp_path: Path
) -> None:
    timm_model = _card(tmp_path, "", "resnet18")
    light = runner.invoke(app, ["validate", str(timm_model)])
    assert light.exit_code == 0, light.stderr
    assert "1 file(s) valid" in light.stdout
    note = _flat(light.stderr)
    assert note.startswith("note:") and "'resnet18' is not one of robench's models" in note
    assert "--deep" in note
    deep = runner.invoke(app, ["validate", "--deep", str(timm_model)])
    assert deep.exit_code == 0, deep.stderr
    assert deep.stderr == ""

    typo = _card(tmp_path, "", "vit_nano_patch4_29")
    light = runner.invoke(app, ["validate", str(typo)])
    assert light.exit_code == 0
    assert "did you mean 'vit_nano_patch4_28'?" in _flat(light.stderr)
    deep = runner.invoke(app, ["validate", "--deep", str(typo)])
    assert deep.exit_code == 2
    assert "Did you mean 'vit_nano_patch4_28'" in _flat(deep.stderr)


def test_validate_deep_accepts_a_plugin_architecture(runner: CliRunner, tmp_path: Path) -> None:
    plugin = tmp_path / "my_models3.py"
    plugin.write_text(
        "import torch\n"
        "from timm.models import register_model\n"
        "@register_model\n"
        "def tiny_plugin_net3(pretrained=False, **kwargs):\n"
        "    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10))\n"
    )
    card = _card(tmp_path, "", "tiny_plugin_net3")
    result = runner.invoke(app, ["validate", str(card), "--import", str(plugin)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # --import implies --deep: the name was found, no note


def test_schema_prints_valid_json_on_stdout(runner: CliRunner) -> None:
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert "results" in schema["properties"]


def test_unknown_model_is_one_line_with_suggestion_and_exit_2(
    runner: CliRunner, tmp_path: Path
) -> None:
    result = runner.invoke(
        app,
        ["eval", "vit_nano_eliptical_patch4_28", "--limit", "4", "-o", str(tmp_path / "r.json")],
    )
    assert result.exit_code == 2
    line = _one_error_line(result.stderr)
    assert "Did you mean 'vit_nano_elliptical_patch4_28'" in line
    assert result.stdout == ""
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    "args",
    [["compare", "no\nsuch.json"], ["sweep", "no\nplan.toml"], ["eval", "local-dir:no\nfolder"]],
    ids=["compare", "sweep", "local-dir"],
)
def test_a_value_with_a_newline_is_quoted_on_one_error_line(
    runner: CliRunner, args: list[str]
) -> None:
    """These messages quote the path raw; the error line escapes it, so stderr stays one line."""
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "no\\n" in _one_error_line(result.stderr)


@pytest.mark.parametrize(
    "command",
    [["train", "vit_nano_patch4_28", "--max-steps", "1"], ["demo", "--quick"]],
    ids=["train", "demo"],
)
@pytest.mark.parametrize("under", ["", "sub"], ids=["the-file", "under-the-file"])
def test_an_out_dir_that_is_a_file_is_refused_before_any_work(
    runner: CliRunner, tmp_path: Path, command: list[str], under: str
) -> None:
    """train ended in "unexpected FileExistsError" (exit 3) after reading its data, and demo
    failed after its first phase."""
    afile = tmp_path / "afile"
    afile.write_text("mine")
    result = runner.invoke(app, [*command, "-o", str(afile / under) if under else str(afile)])
    assert result.exit_code == 2
    assert f"{afile} is a file, not a directory" in _one_error_line(result.stderr)
    assert afile.read_text() == "mine" and sorted(tmp_path.iterdir()) == [afile]


def test_bad_suite_file_is_one_line_and_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text('name = "s"\nversion = 1\n[[perturbations]]\nkind = "pgd"\neps = 2\n')
    result = runner.invoke(
        app,
        ["eval", "vit_nano_patch4_28", "--suite", str(suite), "-o", str(tmp_path / "r.json")],
    )
    assert result.exit_code == 2
    line = _one_error_line(result.stderr)
    assert "eps" in line and str(suite) in line
    assert not (tmp_path / "r.json").exists()


def test_missing_mean_std_is_an_error_not_a_guess(runner: CliRunner, tmp_path: Path) -> None:
    plugin = tmp_path / "my_models.py"
    plugin.write_text(
        "import torch\n"
        "from timm.models import register_model\n"
        "@register_model\n"
        "def tiny_plugin_net(pretrained=False, **kwargs):\n"
        "    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10))\n"
    )
    result = runner.invoke(
        app,
        [
            "eval",
            "tiny_plugin_net",
            "--import",
            str(plugin),
            "--input-size",
            "1,28,28",
            "--limit",
            "4",
            "-o",
            str(tmp_path / "r.json"),
        ],
    )
    assert result.exit_code == 2
    assert "--mean and --std" in _one_error_line(result.stderr)


def test_a_plugin_model_with_explicit_normalisation_evaluates(
    runner: CliRunner, tmp_path: Path
) -> None:
    plugin = tmp_path / "my_models2.py"
    plugin.write_text(
        "import torch\n"
        "from timm.models import register_model\n"
        "@register_model\n"
        "def tiny_plugin_net2(pretrained=False, **kwargs):\n"
        "    torch.manual_seed(0)\n"
        "    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10))\n"
    )
    report = tmp_path / "r.json"
    result = runner.invoke(
        app,
        [
            "eval",
            "tiny_plugin_net2",
            "--import",
            str(plugin),
            "--input-size",
            "1,28,28",
            "--mean",
            "0.286",
            "--std",
            "0.353",
            "--limit",
            "16",
            "--suite",
            "smoke",
            "-o",
            str(report),
            "--format",
            "json",
            "--allow-random-weights",
        ],
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["model"]["config_sources"]["mean"] == "command line"
    assert data["datasets"]["default"]["n_samples"] == 16
    assert json.loads(result.stdout)["model"]["name"] == "tiny_plugin_net2"


def test_cuda_without_gpu_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    result = runner.invoke(
        app, ["eval", "vit_nano_patch4_28", "--device", "cuda", "-o", str(tmp_path / "r.json")]
    )
    assert result.exit_code == 2
    assert "--device cpu" in _one_error_line(result.stderr)


def test_random_weights_are_refused_without_the_flag(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["eval", "vit_nano_patch4_28", "--limit", "4", "-o", str(tmp_path / "r.json")]
    )
    assert result.exit_code == 2
    line = _one_error_line(result.stderr)
    assert "random" in line and "--allow-random-weights" in line and "--checkpoint" in line
    assert not (tmp_path / "r.json").exists()
    assert not (tmp_path / "r.samples.jsonl").exists()


def test_a_1000_class_model_on_10_class_data_is_an_error(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "eval",
            "vit_nano_patch4_28",
            "--num-classes",
            "1000",
            "--allow-random-weights",
            "--limit",
            "4",
            "-o",
            str(tmp_path / "r.json"),
        ],
    )
    assert result.exit_code == 2
    line = _one_error_line(result.stderr)
    assert "10 classes" in line and "predicts 1000" in line and "--class-map" in line
    assert not (tmp_path / "r.json").exists()


def test_validate_accepts_the_shipped_cards_of_robench_models() -> None:
    """In a fresh process: validating a card must register robench's models itself."""
    import subprocess
    import sys

    models = Path(__file__).resolve().parents[1] / "models"
    cards = [str(models / "vit_nano_fmnist.toml"), str(models / "vit_nano_elliptical_fmnist.toml")]
    done = subprocess.run(
        [sys.executable, "-m", "robench", "validate", *cards], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert "2 file(s) valid" in done.stdout + done.stderr
