"""The CLI through typer's CliRunner: exit codes, stdout vs stderr, one-line errors."""

from __future__ import annotations

import json
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
    assert data["data"]["n_samples"] == 16
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
