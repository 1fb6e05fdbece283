"""Every `robench eval` command a shipped suite documents in its header comment runs.

The header's placeholders (MODEL, IMAGENET_C_ROOT, IMAGENET_VAL, ...) are replaced by small
folders generated here in the layouts the headers describe and by a random-weight nano ViT;
`--limit 2` keeps each run to seconds. An optional part (`[--data val=IMAGENET_VAL]`) is run
both left out and given. A placeholder without a fixture here fails the test, so a new suite's
documented command is covered the day it is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from robench._core.bundled import bundled_dir
from robench.cli import app
from robench.data.imagenet_classes import (
    imagenet_1k_wnids,
    read_wnid_list,
    shipped_label_spaces,
)
from tests.lra_fixtures import write_listops, write_pathfinder_release

SUITES = bundled_dir("attacks")
# Runs the command's model with random weights: the placeholders' data have 1000 (ImageNet)
# or 10 (CIFAR-10) classes, and the commands are checked to run, not for their numbers.
SEGMENTER = "segmenter_nano_elliptical --num-classes 150 --allow-random-weights"
MODELS = {
    "cifar10-c": "vit_nano_patch4_28 --allow-random-weights",
    "certify-smoke": "vit_nano_patch4_28 --allow-random-weights",  # Fashion-MNIST
    "certify-smoothadv": "vit_nano_patch4_28 --allow-random-weights",  # Fashion-MNIST
    "ade20k-c": SEGMENTER,
    "segmentation-adversarial": SEGMENTER,
}
# LRA suites: a random-weight nano LRA transformer sized for the LRA data below (ListOps'
# vocabulary of 16 ids; Pathfinder's 32 x 32 = 1024 grey levels).
LRA_TOKENS_MODEL = (
    'lra_transformer_nano --allow-random-weights --model-kwargs {"vocab_size":16,'
    '"num_classes":10,"pad_id":0}'
)
MODELS |= {
    "lra-tokens": LRA_TOKENS_MODEL,
    "lra-smoke": LRA_TOKENS_MODEL,
    "lra-pixels": 'lra_transformer_nano --allow-random-weights --model-kwargs {"vocab_size":256,'
    '"num_classes":2,"max_length":1024}',
}
IMAGENET_MODEL = "vit_nano_patch4_28 --num-classes 1000 --allow-random-weights"
# Values that change how fast a command runs, not what it computes (2 cores run the tests).
FASTER = {"--workers 8": "--workers 0"}


def _image(path: Path, value: int, size: int = 32) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(value).integers(0, 256, (size, size, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)


def _wnid_folder(root: Path, wnids: list[str], per_class: int = 1) -> Path:
    for k, wnid in enumerate(wnids):
        for j in range(per_class):
            _image(root / wnid / f"{j}.png", k * per_class + j, size=8)
    return root


def _imagenet_val(root: Path) -> Path:
    """The validation folder's 1000 class folders, one small image each."""
    return _wnid_folder(root, list(imagenet_1k_wnids()))


def _imagenet_c(root: Path) -> Path:
    """fog and contrast at severities 1 and 2: the rest of ImageNet-C is listed as missing."""
    for corruption in ("fog", "contrast"):
        for severity in (1, 2):
            for k, wnid in enumerate(imagenet_1k_wnids()[:2]):
                _image(root / corruption / str(severity) / wnid / "0.png", severity * 10 + k)
    return root


def _cifar10_c(root: Path) -> Path:
    """fog and saturate, 4 images per severity: ROOT/<corruption>.npy and ROOT/labels.npy."""
    root.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for corruption in ("fog", "saturate"):
        np.save(root / f"{corruption}.npy", rng.integers(0, 256, (20, 32, 32, 3), dtype=np.uint8))
    np.save(root / "labels.npy", np.tile(np.arange(4), 5).astype(np.int64))
    return root


def _cifar10_test(root: Path) -> Path:
    classes = ["airplane", "automobile", "bird", "cat", "deer"]
    classes += ["dog", "frog", "horse", "ship", "truck"]
    for k, name in enumerate(classes):
        _image(root / name / "0.png", k)
    return root


def _imagenet_v2(root: Path) -> Path:
    for index in (0, 1, 999):
        _image(root / str(index) / "0.png", index, size=8)
    return root


def _label_space(name: str) -> Callable[[Path], Path]:
    return lambda root: _wnid_folder(root, read_wnid_list(shipped_label_spaces()[name]))


def _sketch(root: Path) -> Path:
    return _wnid_folder(root, list(imagenet_1k_wnids()[:3]))


def _ade20k(root: Path) -> Path:
    """ADEChallengeData2016 with two validation images and their masks (0 = ignore)."""
    rng = np.random.default_rng(0)
    for k in range(2):
        _image(root / "images" / "validation" / f"ADE_val_{k:08d}.jpg", k, size=24)
        mask = rng.integers(0, 151, (24, 24), dtype=np.uint8)
        path = root / "annotations" / "validation" / f"ADE_val_{k:08d}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(mask).save(path)
    return root


def _sst2(root: Path) -> Path:
    """GLUE's SST-2 folder: dev.tsv with a `sentence\tlabel` header."""
    root.mkdir(parents=True)
    rows = ["sentence\tlabel", "a moving and lovely film\t1", "a dull , boring mess\t0"]
    (root / "dev.tsv").write_text("\n".join(rows) + "\n")
    return root


def _listops(root: Path) -> Path:
    """ListOps in the released layout (basic_{train,val,test}.tsv; tests/lra_fixtures.py)."""
    write_listops(root, rows=4)
    return root


def _pathfinder(root: Path) -> Path:
    """A Pathfinder difficulty folder (imgs/ + metadata/): its test split is 2 images."""
    write_pathfinder_release(root, files=1, per_file=20)
    return root / "curv_baseline"


PLACEHOLDERS: dict[str, Callable[[Path], Path]] = {
    "LISTOPS_DIR": _listops,
    "PATHFINDER_DIR": _pathfinder,
    "SST2_ROOT": _sst2,
    "ADE20K_ROOT": _ade20k,
    "IMAGENET_VAL": _imagenet_val,
    "VAL": _imagenet_val,
    "IMAGENET_C_ROOT": _imagenet_c,
    "IMAGENET_C": _imagenet_c,
    "IMAGENET_A_ROOT": _label_space("imagenet-a"),
    "IMAGENET_A": _label_space("imagenet-a"),
    "IMAGENET_R_ROOT": _label_space("imagenet-r"),
    "IMAGENET_R": _label_space("imagenet-r"),
    "IMAGENET_V2_ROOT": _imagenet_v2,
    "IMAGENET_V2": _imagenet_v2,
    "IMAGENET_SKETCH_ROOT": _sketch,
    "IMAGENET_SKETCH": _sketch,
    "CIFAR_10_C_ROOT": _cifar10_c,
    "CIFAR10_TEST_FOLDER": _cifar10_test,
}


def header_commands(text: str) -> list[str]:
    """The `robench eval ...` commands of a suite file's leading comment, one string each."""
    header = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        header.append(line.lstrip("#").strip())
    joined = "\n".join(header).replace("\\\n", " ")  # a trailing backslash continues the line
    # A command opens its line, after at most a label ("On the fly:"); prose that mentions
    # `robench eval --subset FILE` is not a command.
    found = re.finditer(r"^(?:[A-Z][\w -]*:\s+)?(robench eval [^\n]*)", joined, re.M)
    return [m.group(1).strip() for m in found]


def variants(command: str) -> list[str]:
    """The command with its optional `[...]` parts left out, and with them all given."""
    without = re.sub(r"\s*\[[^\]]*\]", "", command)
    given = re.sub(r"\[([^\]]*)\]", r"\1", command)
    return list(dict.fromkeys([without, given]))


DOCUMENTED = [
    (path.stem, variant)
    for path in sorted(SUITES.glob("*.toml"))
    for command in header_commands(path.read_text())
    for variant in variants(command)
]


def test_the_headers_document_commands_and_these_are_found() -> None:
    suites = {suite for suite, _ in DOCUMENTED}
    assert {"imagenet-c", "imagenet-a", "cifar10-c", "imagenet-shift"} <= suites
    assert len(DOCUMENTED) >= 10
    on_the_fly = "robench eval MODEL -s imagenet-c --data IMAGENET_VAL --workers 8"
    assert ("imagenet-c", on_the_fly) in DOCUMENTED


@pytest.mark.slow
@pytest.mark.parametrize(("suite", "command"), DOCUMENTED)
def test_a_documented_suite_command_runs(tmp_path: Path, suite: str, command: str) -> None:
    for before, after in FASTER.items():
        command = command.replace(before, after)
    words = command.split()
    assert words[:2] == ["robench", "eval"]
    args = ["eval"]
    for word in words[2:]:
        name, _, value = word.rpartition("=")
        if value in PLACEHOLDERS:
            folder = PLACEHOLDERS[value](tmp_path / value.lower())
            args.append(f"{name}={folder}" if name else str(folder))
        elif word == "MODEL":
            args += MODELS.get(suite, IMAGENET_MODEL).split()
        else:
            assert not re.fullmatch(r"[A-Z][A-Z0-9_]+", value), f"no fixture for {value}"
            args.append(word)
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, [*args, "--limit", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists()


def test_an_unnamed_dataset_is_refused_only_by_a_suite_whose_entries_all_name_theirs(
    tmp_path: Path,
) -> None:
    """imagenet-shift has no main dataset: an unnamed --data would be silently unused."""
    val = _imagenet_val(tmp_path / "val")
    args = ["eval", *IMAGENET_MODEL.split(), "-s", "imagenet-shift", "--data", str(val)]
    result = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 2, result.output
    assert "runs on named datasets" in result.stderr and "val=PATH" in result.stderr
    assert not (tmp_path / "r.json").exists()
