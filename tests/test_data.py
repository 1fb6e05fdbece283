"""Dataset readers: preprocessing, class maps, image folders, IDX directories, subsets."""

from __future__ import annotations

import gzip
import hashlib
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader, Subset

import robench.data as data_module
from robench._core.errors import ConfigError, DataError
from robench.data import (
    LabeledImages,
    Preprocessing,
    indices_sha256,
    open_dataset,
    read_class_map,
    select_indices,
)
from robench.data.image_folder import ImageFolderDataset
from robench.data.subset import resolve_subset, shipped_subsets

GRAY_28 = Preprocessing((1, 28, 28))
RGB_16 = Preprocessing((3, 16, 16), interpolation="bilinear")


def _save(path: Path, value: int | tuple[int, int, int], size=(20, 20), mode="RGB") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new(mode, size, value).save(path)
    return path


def _write_idx(path: Path, array: np.ndarray) -> Path:
    """Tiny IDX writer (uint8 only), gzipped when the name ends in .gz."""
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(
        int(n).to_bytes(4, "big") for n in array.shape
    )
    raw = header + array.astype(np.uint8).tobytes()
    path.write_bytes(gzip.compress(raw) if path.suffix == ".gz" else raw)
    return path


def _idx_dir(root: Path, n: int = 6, *, names=None, gz: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    images = np.arange(n * 28 * 28, dtype=np.int64).reshape(n, 28, 28) % 256
    labels = np.arange(n) % 10
    ext = ".gz" if gz else ""
    names = names or {
        "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
        "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    }
    for split, (img_name, lbl_name) in names.items():
        offset = 100 if split == "train" else 0
        _write_idx(root / f"{img_name}{ext}", (images + offset) % 256)
        _write_idx(root / f"{lbl_name}{ext}", labels)
    return root


# ----------------------------------------------------------------------------- preprocessing


def test_white_image_stays_one_and_is_not_normalised(tmp_path: Path) -> None:
    white = Image.new("RGB", (40, 30), (255, 255, 255))
    x = Preprocessing((3, 24, 24), crop_pct=0.875)(white)
    assert x.shape == (3, 24, 24) and x.dtype == torch.float32
    assert torch.all(x == 1.0)
    black = Preprocessing((1, 24, 24))(Image.new("L", (50, 70), 0))
    assert torch.all(black == 0.0)


@pytest.mark.parametrize("size", [(28, 28), (100, 80), (33, 57)])
@pytest.mark.parametrize("target", [(32, 32), (24, 40)])
@pytest.mark.parametrize("crop_pct", [1.0, 0.875])
def test_matches_timm_eval_transform(size, target, crop_pct) -> None:
    from timm.data import create_transform

    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8))
    reference = create_transform(
        input_size=(3, *target),
        interpolation="bicubic",
        crop_pct=crop_pct,
        mean=(0, 0, 0),
        std=(1, 1, 1),
    )(image)
    ours = Preprocessing((3, *target), "bicubic", crop_pct)(image)
    assert ours.shape == (3, *target)
    assert torch.allclose(ours, reference, atol=1e-6)
    assert ours.min() >= 0.0 and ours.max() <= 1.0


def test_channel_conversion() -> None:
    gray = Image.new("L", (16, 16), 51)
    x = RGB_16(gray)
    assert x.shape == (3, 16, 16)
    assert torch.allclose(x, torch.full_like(x, 51 / 255))
    rgb = Image.new("RGB", (28, 28), (255, 0, 0))
    y = GRAY_28(rgb)
    assert y.shape == (1, 28, 28)
    luma = np.array(rgb.convert("L"))[0, 0]  # PIL's ITU-R 601 conversion: 76
    assert torch.allclose(y, torch.full_like(y, luma / 255))


def test_arrays_are_accepted() -> None:
    array = np.full((28, 28), 255, dtype=np.uint8)
    assert torch.all(GRAY_28(array) == 1.0)  # fast path, no resize
    read_only = array.copy()
    read_only.setflags(write=False)
    assert GRAY_28(read_only).shape == (1, 28, 28)
    assert RGB_16(np.zeros((40, 20, 3), dtype=np.uint8)).shape == (3, 16, 16)
    assert RGB_16(array).shape == (3, 16, 16)
    with pytest.raises(DataError, match="uint8"):
        GRAY_28(np.zeros((28, 28), dtype=np.float32))


def test_preprocessing_rejects_bad_config() -> None:
    with pytest.raises(ConfigError, match="Did you mean 'bicubic'"):
        Preprocessing((3, 8, 8), interpolation="bicubc")
    with pytest.raises(ConfigError, match="crop_pct"):
        Preprocessing((3, 8, 8), crop_pct=0.0)
    with pytest.raises(ConfigError, match="channels"):
        Preprocessing((2, 8, 8))
    size: Any = [3, 224, 224]  # a list, as a timm data config holds it
    assert Preprocessing(size, "bilinear", 0.9) == Preprocessing((3, 224, 224), "bilinear", 0.9)


# ------------------------------------------------------------------------------- class maps


def test_class_map_skips_blank_and_comment_lines(tmp_path: Path) -> None:
    path = tmp_path / "map.txt"
    path.write_text("# ImageNet subset\ncat\n\n  dog  \nbird\n\n")
    class_map = read_class_map(path)
    assert class_map.names == ("cat", "dog", "bird")
    assert class_map.index["bird"] == 2


def test_class_map_errors(tmp_path: Path) -> None:
    dup = tmp_path / "dup.txt"
    dup.write_text("cat\ndog\ncat\n")
    with pytest.raises(DataError, match=r"'cat' twice \(lines 1 and 3\)"):
        read_class_map(dup)
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    with pytest.raises(DataError, match="names no classes"):
        read_class_map(empty)
    with pytest.raises(DataError, match="cannot read class map"):
        read_class_map(tmp_path / "missing.txt")


# ---------------------------------------------------------------------------- image folders


def test_image_folder_sorted_names(tmp_path: Path) -> None:
    for i, name in enumerate(["zebra", "ant", "Moose"]):
        _save(tmp_path / name / "b.png", (i * 50, 0, 0))
        _save(tmp_path / name / "a.JPG", (i * 50, 0, 0))
    (tmp_path / "ant" / "notes.txt").write_text("not an image")
    _save(tmp_path / "ant" / "._hidden.png", 0)
    ds = open_dataset(tmp_path, preprocessing=RGB_16)
    assert isinstance(ds, LabeledImages) and ds.kind == "image-folder"
    assert ds.classes == ["Moose", "ant", "zebra"]
    assert ds.class_index_note == "class indices follow sorted folder names"
    assert len(ds) == 6 and ds.targets == [0, 0, 1, 1, 2, 2]
    assert isinstance(ds, ImageFolderDataset)
    assert [p.name for p, _ in ds.samples[:2]] == ["a.JPG", "b.png"]
    x, y = ds[0]
    assert x.shape == (3, 16, 16) and y == 0 and ds.split is None


def test_numeric_folders_sort_numerically(tmp_path: Path) -> None:
    for i in range(12):
        _save(tmp_path / str(i) / "img.png", i * 20, mode="L")
    ds = open_dataset(tmp_path, preprocessing=GRAY_28)
    assert ds.classes == [str(i) for i in range(12)]
    assert "numeric folder names" in ds.class_index_note
    for index in range(len(ds)):
        image, label = ds[index]
        assert round(image[0, 0, 0].item() * 255) == label * 20  # folder "10" is class 10
    assert ds.targets[10] == 10


def test_numeric_folders_not_starting_at_zero_say_so(tmp_path: Path) -> None:
    for i in (1, 2, 10):
        _save(tmp_path / str(i) / "img.png", 0)
    ds = open_dataset(tmp_path, preprocessing=RGB_16)
    assert ds.classes == ["1", "2", "10"]
    assert "not 0..N-1" in ds.class_index_note and "--class-map" in ds.class_index_note


def test_class_map_decides_indices(tmp_path: Path) -> None:
    root = tmp_path / "data"
    _save(root / "dog" / "1.png", 0)
    _save(root / "cat" / "1.png", 0)
    _save(root / "cat" / "2.png", 0)
    class_map = tmp_path / "map.txt"
    class_map.write_text("bird\ndog\ncat\n")  # bird has no images
    ds = open_dataset(root, preprocessing=RGB_16, class_map=class_map)
    assert ds.classes == ["bird", "dog", "cat"]
    assert ds.targets == [1, 2, 2]
    assert str(class_map) in ds.class_index_note


def test_folder_missing_from_class_map_is_an_error(tmp_path: Path) -> None:
    root = tmp_path / "data"
    _save(root / "dog" / "1.png", 0)
    _save(root / "wolf" / "1.png", 0)
    class_map = tmp_path / "map.txt"
    class_map.write_text("dog\ncat\n")
    with pytest.raises(DataError, match="'wolf'"):
        open_dataset(root, preprocessing=RGB_16, class_map=class_map)


def test_image_folder_layout_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="is neither an IDX directory"):
        open_dataset(empty, preprocessing=RGB_16)
    with pytest.raises(DataError, match="no class folders"):
        ImageFolderDataset(empty, RGB_16)
    no_images = tmp_path / "no_images"
    (no_images / "cat").mkdir(parents=True)
    (no_images / "cat" / "readme.txt").write_text("x")
    with pytest.raises(DataError, match="no images"):
        open_dataset(no_images, preprocessing=RGB_16)
    nested = tmp_path / "nested"  # (a corruption name here would be read as ImageNet-C)
    _save(nested / "noisy" / "1" / "cat" / "a.png", 0)
    with pytest.raises(DataError, match="point --data at the level"):
        open_dataset(nested, preprocessing=RGB_16)
    splits = tmp_path / "splits"
    _save(splits / "train" / "cat" / "a.png", 0)
    _save(splits / "val" / "cat" / "a.png", 0)
    with pytest.raises(DataError, match="split folders"):
        open_dataset(splits, preprocessing=RGB_16)


def test_corrupt_image_is_a_data_error(tmp_path: Path) -> None:
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "broken.jpg").write_bytes(b"not a jpeg")
    ds = open_dataset(tmp_path, preprocessing=RGB_16)
    with pytest.raises(DataError, match=r"broken\.jpg"):
        ds[0]


def test_dataloader_over_subset(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        for i in range(3):
            _save(tmp_path / name / f"{i}.png", (255, 255, 255), size=(30, 20))
    ds = open_dataset(tmp_path, preprocessing=RGB_16)
    loader = DataLoader(Subset(ds, [0, 4, 8]), batch_size=2)
    images, labels = next(iter(loader))
    assert images.shape == (2, 3, 16, 16) and labels.tolist() == [0, 1]
    assert torch.all(images == 1.0)


def _fashion_folder(root: Path, fashion_mnist_dir: Path) -> Path:
    """Real Fashion-MNIST images as PNG class folders: equal sizes, different sizes (wide,
    tall, already at 64x64, smaller than it) and modes (RGB, grayscale)."""
    from robench.data.idx import read_idx

    images = read_idx(fashion_mnist_dir / "t10k-images-idx3-ubyte.gz")[:14]
    sizes = [(80, 80)] * 5 + [(90, 60), (60, 90), (64, 64), (64, 64), (40, 40), (80, 80)]
    sizes += [(90, 60), (33, 47), (80, 80)]
    for i, (pixels, size) in enumerate(zip(images, sizes, strict=True)):
        image = Image.fromarray(pixels).resize(size)
        folder = root / f"{i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (image if i % 4 == 3 else image.convert("RGB")).save(folder / f"{i:02d}.png")
    return root


@pytest.mark.parametrize(
    "preprocessing",
    [
        Preprocessing((3, 64, 64), interpolation="bilinear", resize_mode="squash",
                      backend="torchvision"),
        Preprocessing((3, 32, 32), interpolation="bicubic", crop_pct=32 / 36,
                      resize_mode="squash", backend="torchvision"),
        Preprocessing((3, 56, 56), interpolation="bicubic", crop_pct=0.875,
                      resize_mode="shorter", backend="torchvision"),
        Preprocessing((1, 28, 28), interpolation="bilinear", backend="torchvision"),
        Preprocessing((3, 64, 64), interpolation="bilinear"),
    ],
)  # fmt: skip
def test_batched_preprocessing_equals_the_per_image_path(
    preprocessing: Preprocessing, tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    """A DataLoader reads a batch through `__getitems__`, which resizes the images of one size
    together (torchvision backend): the pixels equal each image's own, to the last bit."""
    ds = open_dataset(_fashion_folder(tmp_path, fashion_mnist_dir), preprocessing=preprocessing)
    indices = list(range(len(ds)))
    random.Random(0).shuffle(indices)
    batched = ds.__getitems__(indices)
    for index, (image, label) in zip(indices, batched, strict=True):
        alone, alone_label = ds[index]
        assert torch.equal(image, alone) and label == alone_label
        assert image.is_contiguous()
    loaded, labels = next(iter(DataLoader(ds, batch_sampler=[indices])))
    assert torch.equal(loaded, torch.stack([ds[i][0] for i in indices]))
    assert labels.tolist() == [ds.targets[i] for i in indices]


def test_batched_squash_resize_equals_the_transformers_processor(
    tmp_path: Path, fashion_mnist_dir: Path
) -> None:
    from transformers import ViTImageProcessor

    processor = ViTImageProcessor(
        size={"height": 64, "width": 64}, do_rescale=False, do_normalize=False
    )
    if getattr(processor, "backend", None) != "torchvision":
        pytest.skip("this transformers resizes with PIL")
    root = _fashion_folder(tmp_path, fashion_mnist_dir)
    preprocessing = Preprocessing(
        (3, 64, 64), interpolation="bilinear", resize_mode="squash", backend="torchvision"
    )
    ds = open_dataset(root, preprocessing=preprocessing)
    files = [path for path, _ in ds.samples]
    expected = processor([Image.open(p).convert("RGB") for p in files], return_tensors="pt")
    ours = torch.stack([image for image, _ in ds.__getitems__(list(range(len(ds))))])
    assert torch.equal((ours * 255).round(), expected["pixel_values"].round())


def test_batched_loading_names_an_unreadable_file(tmp_path: Path) -> None:
    preprocessing = Preprocessing((3, 16, 16), interpolation="bilinear", backend="torchvision")
    _save(tmp_path / "cat" / "a.png", (1, 2, 3), size=(30, 20))
    (tmp_path / "cat" / "broken.jpg").write_bytes(b"not a jpeg")
    ds = open_dataset(tmp_path, preprocessing=preprocessing)
    with pytest.raises(DataError, match=r"broken\.jpg"):
        ds.__getitems__([0, 1])


# ------------------------------------------------------------------------------------- IDX


@pytest.mark.parametrize("gz", [True, False])
def test_idx_directory(tmp_path: Path, gz: bool) -> None:
    root = _idx_dir(tmp_path / "mnist", gz=gz)
    test = open_dataset(root, preprocessing=GRAY_28)
    train = open_dataset(root, preprocessing=GRAY_28, split="train")
    assert test.kind == "idx" and test.split == "test" and len(test) == 6
    assert test.classes == [str(i) for i in range(6)]
    assert test.targets == [0, 1, 2, 3, 4, 5]
    x, y = test[1]
    assert x.shape == (1, 28, 28) and y == 1
    assert round(x[0, 0, 0].item() * 255) == (28 * 28) % 256
    assert round(train[0][0][0, 0, 0].item() * 255) == 100
    assert RGB_16(np.zeros((28, 28), dtype=np.uint8)).shape == (3, 16, 16)
    assert open_dataset(root, preprocessing=RGB_16)[0][0].shape == (3, 16, 16)


def test_idx_dotted_names_and_fashion_classes(tmp_path: Path) -> None:
    names = {"test": ("t10k-images.idx3-ubyte", "t10k-labels.idx1-ubyte")}
    root = _idx_dir(tmp_path / "my-fashion-data", n=10, names=names, gz=False)
    ds = open_dataset(root, preprocessing=GRAY_28)
    assert ds.classes[0] == "T-shirt/top" and ds.classes[9] == "Ankle boot"
    with pytest.raises(DataError, match=r"train-images-idx3-ubyte\[\.gz\]"):
        open_dataset(root, preprocessing=GRAY_28, split="train")
    with pytest.raises(DataError, match="split 'val'"):
        open_dataset(root, preprocessing=GRAY_28, split="val")


def test_idx_errors(tmp_path: Path) -> None:
    root = _idx_dir(tmp_path / "idx")
    (root / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte"):
        open_dataset(root, preprocessing=GRAY_28)
    _write_idx(root / "t10k-labels-idx1-ubyte.gz", np.zeros(5))
    with pytest.raises(DataError, match="do not belong together"):
        open_dataset(root, preprocessing=GRAY_28)
    raw = gzip.decompress((root / "t10k-images-idx3-ubyte.gz").read_bytes())
    (root / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(raw[:-100]))
    with pytest.raises(DataError, match="truncated"):
        open_dataset(root, preprocessing=GRAY_28)


def test_real_fashion_mnist_test_split(fashion_mnist_dir: Path) -> None:
    ds = open_dataset("fashion-mnist", preprocessing=GRAY_28)
    assert ds.root == fashion_mnist_dir and len(ds) == 10000
    assert ds.targets[:10] == [9, 2, 1, 1, 6, 1, 4, 6, 5, 7]
    assert ds.classes[9] == "Ankle boot"
    x, y = ds[0]
    assert y == 9 and x.shape == (1, 28, 28) and x.min() >= 0.0 and x.max() == 1.0


def test_builtin_and_path_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = data_module.BuiltinDataset(tmp_path / "gone", "ROBENCH_TEST_UNSET", "run `make data`")
    monkeypatch.setitem(data_module.BUILTIN_DATASETS, "fashion-mnist", missing)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match="make data"):
        open_dataset("fashion-mnist", preprocessing=GRAY_28)
    with pytest.raises(DataError, match="Did you mean the built-in 'fashion-mnist'"):
        open_dataset("fashion_mnist", preprocessing=GRAY_28)
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(DataError, match="is a file"):
        open_dataset(tmp_path / "file.txt", preprocessing=GRAY_28)


# ---------------------------------------------------------------------------------- subsets


def test_select_indices() -> None:
    np_state, torch_state, py_state = (
        np.random.get_state(legacy=False),
        torch.get_rng_state(),
        random.getstate(),
    )
    a = select_indices(1000, 50, seed=0)
    assert a == select_indices(1000, 50, seed=0)
    assert a != select_indices(1000, 50, seed=1)
    assert a == sorted(a) and len(set(a)) == 50 and all(0 <= i < 1000 for i in a)
    assert set(a) <= set(select_indices(1000, 100, seed=0))  # nested subsets
    assert select_indices(10, 50, seed=3) == list(range(10))
    assert select_indices(10, None, seed=3) == list(range(10))
    assert select_indices(0, 5, seed=0) == []
    assert np.array_equal(
        np.random.get_state(legacy=False)["state"]["key"], np_state["state"]["key"]
    )
    assert torch.equal(torch.get_rng_state(), torch_state) and random.getstate() == py_state
    with pytest.raises(ConfigError, match="--limit"):
        select_indices(10, 0, seed=0)
    with pytest.raises(ConfigError, match="seed"):
        select_indices(10, 5, seed=-1)


def test_indices_sha256_is_stable() -> None:
    golden = "c0be322c1ad6af50f418b96232d98fe25a36d5d0a557291833f8248f2084b8ef"
    assert indices_sha256([0, 1, 2]) == golden == hashlib.sha256(b"0,1,2").hexdigest()
    assert indices_sha256(np.array([0, 1, 2])) == golden
    assert indices_sha256([0, 1, 2]) != indices_sha256([0, 1, 3])
    # The seeded subset itself is a golden value: reports from other machines must agree.
    assert select_indices(100, 5, seed=0) == [2, 26, 55, 75, 86]


def test_the_built_in_dataset_location_can_be_overridden(
    tmp_path: Path, fashion_mnist_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from robench.data import BUILTIN_DATASETS

    monkeypatch.setenv("ROBENCH_FASHION_MNIST_DIR", str(tmp_path / "nowhere"))
    assert BUILTIN_DATASETS["fashion-mnist"].path == tmp_path / "nowhere"
    with pytest.raises(DataError, match="ROBENCH_FASHION_MNIST_DIR"):
        open_dataset("fashion-mnist", preprocessing=GRAY_28)
    monkeypatch.setenv("ROBENCH_FASHION_MNIST_DIR", str(fashion_mnist_dir))
    data = open_dataset("fashion-mnist", preprocessing=GRAY_28)
    assert len(data) == 10_000 and data.root == fashion_mnist_dir


# ------------------------------------------------------------------------ listed subsets

ROBUSTBENCH_5000 = "robustbench-imagenet-5000"


def _shipped_ids(name: str) -> list[str]:
    text = shipped_subsets()[name].read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def _write_list(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_shipped_robustbench_imagenet_subset_is_intact() -> None:
    """5,000 unique `<wnid>/ILSVRC2012_val_<8 digits>.JPEG` lines, in RobustBench's order
    (golden hash of the lines joined by newlines; the header names the source)."""
    path = shipped_subsets()[ROBUSTBENCH_5000]
    ids = _shipped_ids(ROBUSTBENCH_5000)
    assert len(ids) == len(set(ids)) == 5000
    assert all(re.fullmatch(r"n[0-9]{8}/ILSVRC2012_val_[0-9]{8}\.JPEG", i) for i in ids)
    assert ids[0] == "n09468604/ILSVRC2012_val_00015253.JPEG"
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()
    assert digest == "d4121626d07722a0126c35b1563042e46a546f1a05ce705f2cdc635896d58574"
    assert "robustbench/helper_files/imagenet_test_image_ids.txt" in path.read_text()


def test_shipped_subset_resolves_by_name_against_an_imagenet_layout() -> None:
    """The 5,000 names among 5,003 items of an ImageNet-style folder: exactly their indices."""
    ids = _shipped_ids(ROBUSTBENCH_5000)
    extra = ["n01440764/ILSVRC2012_val_99999991.JPEG", "n01440764/ILSVRC2012_val_99999992.JPEG"]
    names = sorted([*ids, *extra, "n99999999/ILSVRC2012_val_99999993.JPEG"])
    indices = resolve_subset(ROBUSTBENCH_5000, len(names), names)
    assert indices == sorted(indices) and len(indices) == 5000
    assert {names[i] for i in indices} == set(ids)


def test_subset_file_names_match_an_image_folder(tmp_path: Path) -> None:
    """Lines match `<class>/<file>`, or the file name alone when it is unique; comments and
    blank lines are skipped; the result is sorted whatever the file's order."""
    root = tmp_path / "val"
    for wnid in ("n01", "n02"):
        for k in range(3):
            _save(root / wnid / f"val_{wnid}_{k}.JPEG", 0)
    ds = open_dataset(root, preprocessing=RGB_16)
    assert isinstance(ds, ImageFolderDataset)
    names = ds.relative_paths()
    assert names[:2] == ["n01/val_n01_0.JPEG", "n01/val_n01_1.JPEG"] and len(names) == 6
    subset = _write_list(
        tmp_path / "subset.txt",
        [
            "# two by path, one by file name",
            "n02/val_n02_2.JPEG",
            "",
            "val_n01_1.JPEG",
            "n01/val_n01_0.JPEG",
        ],
    )
    assert resolve_subset(subset, len(ds), names) == [0, 1, 5]
    assert resolve_subset(str(subset), len(ds), names) == [0, 1, 5]


def test_robustbench_lines_find_images_in_numbered_class_folders(tmp_path: Path) -> None:
    """`<wnid>/<file>` lines against folders named 0..999: matched by the unique file name."""
    names = ["0/ILSVRC2012_val_00000001.JPEG", "1/ILSVRC2012_val_00000002.JPEG"]
    subset = _write_list(tmp_path / "s.txt", ["n01443537/ILSVRC2012_val_00000002.JPEG"])
    assert resolve_subset(subset, 2, names) == [1]


def test_subset_of_integer_indices_works_without_names(tmp_path: Path) -> None:
    subset = _write_list(tmp_path / "idx.txt", ["7", "0", "# comment", "3"])
    assert resolve_subset(subset, 10) == [0, 3, 7]
    assert resolve_subset(subset, 10, [f"c/{i}.png" for i in range(10)]) == [0, 3, 7]
    with pytest.raises(ConfigError, match=r"outside this dataset of 5 items.*'7'.*0-based"):
        resolve_subset(subset, 5)


@pytest.mark.parametrize(
    ("lines", "names", "fragment"),
    [
        (
            ["a/1.png", "a/9.png", "b/8.png"],
            ["a/1.png", "a/2.png"],
            r"2 of the 3 images.*'a/9.png'.*--data",
        ),
        (["x.png"], None, "no file names.*integer indices"),
        (["a/1.png", "a/1.png"], ["a/1.png"], "more than once: 'a/1.png'"),
        (["# only a comment", ""], ["a/1.png"], "lists no items"),
        (["1.png"], ["a/1.png", "b/1.png"], "several class folders.*<class>/<file>"),
        (["a/1.png", "1.png"], ["a/1.png"], "same image twice"),
    ],
    ids=["missing", "names-without-names", "repeated", "empty", "ambiguous", "twice"],
)
def test_bad_subset_files_are_config_errors(
    tmp_path: Path, lines: list[str], names: list[str] | None, fragment: str
) -> None:
    subset = _write_list(tmp_path / "subset.txt", lines)
    with pytest.raises(ConfigError, match=fragment):
        resolve_subset(subset, len(names) if names else 3, names)


def test_unknown_subset_name_or_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Did you mean 'robustbench-imagenet-5000'"):
        resolve_subset("robustbench-imagenet-500", 10)
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_subset(tmp_path / "nope.txt", 10)
