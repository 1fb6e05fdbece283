"""Hostile segmentation inputs (issue 39): a split the folder does not have, an empty
images/ + masks/ folder and a classifier under a segmentation suite are each refused in one
sentence that names the folder or model and the fix, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hostile import refused
from PIL import Image

from robench._core.errors import DataError
from robench.data.segmentation.layouts import open_segmentation_dataset

SEGMENTER = "segmenter_nano_elliptical_scenes"  # 11 classes, RGB 64x64


def _pairs(root: Path, n: int = 2) -> Path:
    (root / "images").mkdir(parents=True)
    (root / "masks").mkdir()
    for i in range(n):
        rng = np.random.default_rng(i)
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(
            root / "images" / f"{i}.png"
        )
        Image.fromarray(rng.integers(0, 11, (32, 32), dtype=np.uint8)).save(
            root / "masks" / f"{i}.png"
        )
    return root


def _eval(model: str, data: Path | None, tmp_path: Path, *extra: str) -> list[object]:
    given = ["-d", data] if data is not None else []
    out = tmp_path / "runs" / "r.json"
    return ["eval", model, "-s", "segmentation-smoke", *given, "-o", out, "--limit", "2", *extra]


def test_a_split_of_a_folder_without_splits_is_refused(tmp_path: Path) -> None:
    data = _pairs(tmp_path / "seg")
    args = _eval(SEGMENTER, data, tmp_path, "--split", "trian")
    refused(args, tmp_path, f"{data} (folder layout", "--split trian", "leave --split out")


def test_an_empty_images_and_masks_folder_is_named(tmp_path: Path) -> None:
    (tmp_path / "seg" / "images").mkdir(parents=True)
    (tmp_path / "seg" / "masks").mkdir()
    refused(
        _eval(SEGMENTER, tmp_path / "seg", tmp_path), tmp_path, f"{tmp_path / 'seg' / 'images'}"
    )


@pytest.mark.parametrize("data", [None, "folder"])
def test_a_one_channel_classifier_is_told_it_is_a_classifier(
    tmp_path: Path, data: str | None
) -> None:
    folder = _pairs(tmp_path / "seg") if data else None
    line = refused(_eval("vit_nano_fmnist", folder, tmp_path), tmp_path, "is an image classifier")
    assert "vit_nano_fmnist" in line and "segmentation model" in line
    assert "input" not in line.split(";")[1]  # the fix is another model, not input sizes


def test_other_layouts_name_their_folder(tmp_path: Path) -> None:
    (tmp_path / "leftImg8bit" / "val").mkdir(parents=True)
    (tmp_path / "gtFine" / "val").mkdir(parents=True)
    with pytest.raises(DataError, match=r"leftImg8bit/val and .*gtFine/val hold no image files"):
        open_segmentation_dataset(tmp_path)
    with pytest.raises(DataError, match=rf"{tmp_path} \(cityscapes layout\) has no split 'trian'"):
        open_segmentation_dataset(tmp_path, split="trian")


def test_an_unreadable_mask_or_classes_file_is_named(tmp_path: Path) -> None:
    root = _pairs(tmp_path / "seg")
    (root / "masks" / "1.png").write_bytes(b"not a png")
    with pytest.raises(DataError, match=r"cannot read mask .*masks/1.png"):
        open_segmentation_dataset(root)
    _pairs(tmp_path / "named")
    (tmp_path / "named" / "classes.txt").write_bytes("ciel\nroute\xe9\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"classes.txt is not UTF-8"):
        open_segmentation_dataset(tmp_path / "named")
    (tmp_path / "named" / "classes.txt").write_text("\n\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"classes.txt lists no class names"):
        open_segmentation_dataset(tmp_path / "named")
