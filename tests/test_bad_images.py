"""`--bad-images skip`: unreadable images are left out of every perturbation and listed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from robench.cli import app
from robench.data.unreadable import find_unreadable

MODEL = "vit_nano_fmnist"
SUITE = (
    'name = "two"\nversion = 1\n\n[[perturbations]]\nkind = "clean"\n\n'
    '[[perturbations]]\nkind = "fgsm"\neps = "8/255"\n'
)
BAD = ("3/1.png", "7/0.png")  # one not an image, one truncated


def _folder(root: Path) -> Path:
    for c in range(10):
        (root / str(c)).mkdir(parents=True)
        for i in range(2):
            rng = np.random.default_rng(c * 10 + i)
            pixels = rng.integers(0, 255, (28, 28), dtype=np.uint8)
            Image.fromarray(pixels).save(root / str(c) / f"{i}.png")
    return root


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A folder with two unreadable images, the same without them, and the suite."""
    root = tmp_path_factory.mktemp("bad_images")
    good = _folder(root / "good")
    bad = root / "bad"
    shutil.copytree(good, bad)
    (bad / BAD[0]).write_bytes(b"not a png")
    (bad / BAD[1]).write_bytes((good / BAD[1]).read_bytes()[:60])
    for name in BAD:
        (good / name).unlink()
    suite = root / "two.toml"
    suite.write_text(SUITE, encoding="utf-8")
    return good, bad, suite


def _eval(data: Path, suite: Path, out: Path, *extra: str) -> dict:
    args = ["eval", MODEL, "-s", str(suite), "-d", str(data), "-o", str(out), "-b", "4", *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text(encoding="utf-8"))


def _outcomes(report: dict) -> dict[str, object]:
    """Per dataset, the targets and every result's per-sample columns, in sample order."""
    return {
        name: (samples["targets"], samples["values"]) for name, samples in report["samples"].items()
    }


def test_skipped_images_are_left_out_of_every_perturbation_and_listed(
    folders: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    good, bad, suite = folders
    skipped = _eval(bad, suite, tmp_path / "skip.json", "--bad-images", "skip")
    reference = _eval(good, suite, tmp_path / "good.json")

    listed = skipped["datasets"]["default"]["skipped"]
    assert [Path(entry["reason"].split()[3]).relative_to(bad).as_posix() for entry in listed] == [
        *BAD
    ]
    assert all("cannot decode image" in entry["reason"] for entry in listed)
    assert skipped["datasets"]["default"]["n_samples"] == 18
    assert skipped["datasets"]["default"]["n_total"] == 20
    for result in skipped["results"]:
        assert result["n_samples"] == 18
    # The 18 readable images get the same outcomes as a folder without the bad files.
    assert _outcomes(skipped) == _outcomes(reference)
    metrics = [r["metrics"] for r in skipped["results"]]
    assert metrics == [r["metrics"] for r in reference["results"]]
    assert reference["datasets"]["default"]["skipped"] == []


def test_skipping_resumes_to_the_same_report(
    folders: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, bad, suite = folders
    first = _eval(bad, suite, tmp_path / "r.json", "--bad-images", "skip")
    samples = tmp_path / "r.samples.jsonl"
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    samples.write_text("".join(lines[:3]), encoding="utf-8")  # as if killed after two batches
    resumed = _eval(bad, suite, tmp_path / "r.json", "--bad-images", "skip", "--resume")
    assert _outcomes(resumed) == _outcomes(first)
    assert resumed["datasets"] == first["datasets"]


def test_the_default_stops_and_suggests_skipping(
    folders: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, bad, suite = folders
    out = tmp_path / "r.json"
    args = ["eval", MODEL, "-s", str(suite), "-d", str(bad), "-o", str(out), "-b", "4"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "cannot decode image" in result.output and "--bad-images skip" in result.output
    assert not out.exists() and not list(tmp_path.iterdir())


def test_find_unreadable_reports_each_bad_sample_once(folders: tuple[Path, Path, Path]) -> None:
    from robench.data import open_dataset
    from robench.data.preprocessing import Preprocessing

    _, bad, _ = folders
    dataset = open_dataset(str(bad), preprocessing=Preprocessing(input_size=(1, 28, 28)))
    names = [path.relative_to(bad).as_posix() for path, _ in dataset.samples]
    found = find_unreadable(dataset, list(range(len(dataset))), workers=2)
    assert [names[u.index] for u in found] == [*BAD]
    assert find_unreadable(dataset, [0, 1, 2]) == []
