"""Segmentation readers: each folder layout built small in tmp_path, and the bad inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from robench._core.errors import DataError
from robench.data.segmentation.label_maps import IGNORE_INDEX
from robench.data.segmentation.layouts import open_segmentation_dataset


def _image(path: Path, size: tuple[int, int] = (6, 4), fmt: str | None = None) -> None:
    """An RGB image of `size` (width, height)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(len(str(path)))
    pixels = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path, format=fmt)


def _mask(path: Path, values: np.ndarray, palette: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mask = Image.fromarray(values.astype(np.uint8), mode="L")
    if palette:
        mask = mask.convert("P")
        mask.putpalette([c for i in range(256) for c in ((i * 37) % 256, (i * 91) % 256, i)])
    mask.save(path)


def _values(fill: int, size: tuple[int, int] = (6, 4)) -> np.ndarray:
    values = np.full((size[1], size[0]), fill)
    values[0, 0] = IGNORE_INDEX
    return values


def test_ade20k_reduces_the_zero_label_and_resizes_images_only(tmp_path: Path) -> None:
    root = tmp_path / "ADEChallengeData2016"
    values = _values(150)
    values[1, :] = 0  # "other" -> ignored
    values[2, :] = 1  # first class -> 0
    _image(root / "images" / "validation" / "ADE_val_1.jpg")
    _mask(root / "annotations" / "validation" / "ADE_val_1.png", values)
    data = open_segmentation_dataset(tmp_path, image_size=(8, 10))
    assert (data.kind, data.split, data.num_classes, len(data)) == ("ade20k", "validation", 150, 1)
    assert data.classes[:3] == ["wall", "building", "sky"] and data.ignore_index == IGNORE_INDEX
    image, labels = data[0]
    assert image.shape == (3, 8, 10) and image.dtype == torch.float32
    assert float(image.min()) >= 0.0 and float(image.max()) <= 1.0
    assert labels.shape == (4, 6) and labels.dtype == torch.int64
    assert labels[0, 0] == IGNORE_INDEX and (labels[1] == IGNORE_INDEX).all()
    assert (labels[2] == 0).all() and labels[3, 3] == 149


def test_cityscapes_pairs_across_cities(tmp_path: Path) -> None:
    for city, stem in [("aachen", "aachen_000000_000019"), ("bonn", "bonn_000001_000019")]:
        _image(tmp_path / "leftImg8bit" / "val" / city / f"{stem}_leftImg8bit.png")
        _mask(tmp_path / "gtFine" / "val" / city / f"{stem}_gtFine_labelTrainIds.png", _values(18))
        _mask(tmp_path / "gtFine" / "val" / city / f"{stem}_gtFine_labelIds.png", _values(33))
    data = open_segmentation_dataset(tmp_path)
    assert (data.kind, data.split, data.num_classes, len(data)) == ("cityscapes", "val", 19, 2)
    image, labels = data[1]
    assert image.shape == (3, 4, 6) and int(labels[1, 1]) == 18


def test_voc_reads_palette_indices_not_colours(tmp_path: Path) -> None:
    root = tmp_path / "VOCdevkit" / "VOC2012"
    (root / "ImageSets" / "Segmentation").mkdir(parents=True)
    (root / "ImageSets" / "Segmentation" / "val.txt").write_text("2007_000033\n")
    (root / "ImageSets" / "Segmentation" / "train.txt").write_text("2007_000032\n")
    for name in ("2007_000032", "2007_000033"):
        _image(root / "JPEGImages" / f"{name}.jpg", fmt="JPEG")
        _mask(root / "SegmentationClass" / f"{name}.png", _values(20), palette=True)
    data = open_segmentation_dataset(tmp_path)
    assert (data.kind, data.split, data.num_classes, len(data)) == ("voc2012", "val", 21, 1)
    assert data.pairs[0][0].name == "2007_000033.jpg"
    _, labels = data[0]
    assert int(labels[1, 1]) == 20 and int(labels[0, 0]) == IGNORE_INDEX
    assert len(open_segmentation_dataset(tmp_path, split="train")) == 1


def test_generic_folder_with_and_without_classes_file(tmp_path: Path) -> None:
    for stem, fill in [("a", 2), ("b", 1)]:
        _image(tmp_path / "images" / f"{stem}.jpg", fmt="JPEG")
        _mask(tmp_path / "masks" / f"{stem}.png", _values(fill))
    data = open_segmentation_dataset(tmp_path)
    assert (data.kind, data.split, data.classes) == ("folder", None, ["0", "1", "2"])
    (tmp_path / "classes.txt").write_text("sky\nroad\ncar\nbike\n")
    data = open_segmentation_dataset(tmp_path, layout="folder")
    assert data.classes == ["sky", "road", "car", "bike"] and len(data) == 2


def test_mask_of_another_size_is_a_data_error(tmp_path: Path) -> None:
    _image(tmp_path / "images" / "a.png", size=(6, 4))
    _mask(tmp_path / "masks" / "a.png", _values(0, size=(5, 4)))
    with pytest.raises(DataError, match=r"masks/a.png is 5x4 but its image .* is 6x4"):
        open_segmentation_dataset(tmp_path)[0]


def test_label_beyond_the_classes_names_the_file(tmp_path: Path) -> None:
    _image(tmp_path / "images" / "a.png")
    _mask(tmp_path / "masks" / "a.png", _values(7))
    (tmp_path / "classes.txt").write_text("sky\nroad\n")
    with pytest.raises(DataError, match=r"masks/a.png holds label 7, not one of the 2 classes"):
        open_segmentation_dataset(tmp_path)[0]


@pytest.mark.parametrize(
    ("images", "masks", "message"),
    [
        (["a"], ["a", "b"], r"masks in .*masks without an image in .*images: 'b'"),
        (["a", "c"], ["a"], r"images in .*images without a mask in .*masks: 'c'"),
        ([], ["a"], r"masks in .*masks without an image in .*images: 'a'"),
    ],
)
def test_unpaired_files_are_a_data_error(
    tmp_path: Path, images: list[str], masks: list[str], message: str
) -> None:
    (tmp_path / "images").mkdir()
    for stem in images:
        _image(tmp_path / "images" / f"{stem}.png")
    for stem in masks:
        _mask(tmp_path / "masks" / f"{stem}.png", _values(0))
    with pytest.raises(DataError, match=message):
        open_segmentation_dataset(tmp_path)


def test_unknown_folder_layout_and_split(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not hold the folders of any known layout"):
        open_segmentation_dataset(tmp_path)
    with pytest.raises(DataError, match="unknown segmentation layout 'coco'"):
        open_segmentation_dataset(tmp_path, layout="coco")
    (tmp_path / "leftImg8bit").mkdir()
    (tmp_path / "gtFine").mkdir()
    with pytest.raises(DataError, match=r"\(cityscapes layout\) has no split 'dev'"):
        open_segmentation_dataset(tmp_path, split="dev")


FASHION = Path("/usr/share/datasets/fashion-mnist")


@pytest.mark.skipif(not FASHION.is_dir(), reason="Fashion-MNIST is not installed")
def test_fashion_scenes_are_seeded_by_index_with_exact_labels() -> None:
    from robench.data.segmentation.scenes import FashionScenes

    data = FashionScenes("test", image_size=(32, 48), length=20)
    assert (data.kind, data.split, data.num_classes, len(data)) == (
        "fashion-scenes",
        "test",
        11,
        20,
    )
    assert data.classes[0] == "background" and data.classes[1] == "T-shirt/top"
    image, labels = data[3]
    assert image.shape == (3, 32, 48) and 0.0 <= float(image.min()) <= float(image.max()) <= 1.0
    assert labels.shape == (64, 64) and labels.dtype == torch.int64
    assert int(labels.min()) == 0 and 0 < int(labels.max()) <= 10
    # the same scene whatever was read before, and in a fresh dataset
    again_image, again_labels = FashionScenes("test", length=20)[3]
    assert torch.equal(labels, again_labels)
    first, _ = FashionScenes("test").scene(3)
    assert torch.equal(again_image, torch.from_numpy(first).permute(2, 0, 1))
    # train scenes come from the train garments and differ
    assert not torch.equal(FashionScenes("train", length=4)[3][1], labels)
    with pytest.raises(DataError, match="no split 'val'"):
        FashionScenes("val")
