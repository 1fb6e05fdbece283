"""Distribution-shift and pre-rendered corruption datasets, and label-space restriction, on tiny
fixtures written in the real layouts (ImageNet-A/R/V2/Sketch/C folders, CIFAR-10-C arrays)."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from robench._core.errors import DataError
from robench.data import (
    CorruptionFamily,
    LabelSpace,
    Preprocessing,
    open_dataset,
    read_label_space,
    restrict_to_label_space,
)
from robench.data.imagenet_classes import (
    CLASSES_DIR,
    imagenet_1k_index,
    imagenet_1k_wnids,
    read_wnid_list,
    shipped_label_spaces,
)
from robench.data.label_space_view import LabelSpaceView

RGB_16 = Preprocessing((3, 16, 16), interpolation="bilinear")
RGB_32 = Preprocessing((3, 32, 32))
RGB_224 = Preprocessing((3, 224, 224), crop_pct=0.875)

A_WNIDS = read_wnid_list(shipped_label_spaces()["imagenet-a"])
R_WNIDS = read_wnid_list(shipped_label_spaces()["imagenet-r"])
TENCH, GOLDFISH, SHARK = "n01440764", "n01443537", "n01484850"  # ImageNet-1k classes 0, 1, 2


def _save(path: Path, value: int | tuple[int, int, int] = 0, size=(8, 8)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, value).save(path)
    return path


def _wnid_folders(root: Path, wnids) -> Path:
    """One 8x8 PNG per wnid folder, red channel = the folder's position in `wnids`."""
    for k, wnid in enumerate(wnids):
        _save(root / wnid / "img.png", (k % 256, 0, 0))
    return root


def _red(image: torch.Tensor) -> int:
    return round(image[0, 0, 0].item() * 255)


# --------------------------------------------------------------------------- class lists


def test_shipped_class_lists_and_their_provenance() -> None:
    wnids = imagenet_1k_wnids()
    assert len(wnids) == 1000 and list(wnids) == sorted(wnids)
    assert wnids[0] == TENCH and wnids[-1] == "n15075141"
    assert imagenet_1k_wnids() is wnids  # cached
    assert len(A_WNIDS) == len(R_WNIDS) == 200 and len(set(A_WNIDS) & set(R_WNIDS)) == 86
    assert set(A_WNIDS) | set(R_WNIDS) <= set(wnids)
    for name in ("imagenet1k_wnids.txt", "imagenet_a_wnids.txt", "imagenet_r_wnids.txt"):
        assert (CLASSES_DIR / name).read_text().startswith("# ")
    readme = (CLASSES_DIR / "README.md").read_text()
    assert "aa4b5850c1543fa488abf260f18390eda46cf85d" in readme and "MIT" in readme


def test_wnid_list_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text(f"# c\n{TENCH}\n\n{GOLDFISH}\n{TENCH}\n")
    with pytest.raises(DataError, match=rf"{TENCH} twice \(lines 2 and 5\)"):
        read_wnid_list(bad)
    bad.write_text("tench\n")
    with pytest.raises(DataError, match="line 1 is 'tench', not a wnid"):
        read_wnid_list(bad)
    bad.write_text("# nothing\n")
    with pytest.raises(DataError, match="names no wnids"):
        read_wnid_list(bad)


# --------------------------------------------------------------------------- label spaces


def test_shipped_label_spaces() -> None:
    a, r = read_label_space("imagenet-a"), read_label_space("imagenet-r")
    assert (a.name, a.source, a.wnids) == ("imagenet-a", "shipped", A_WNIDS)
    index = imagenet_1k_index()
    assert a.output_classes == tuple(index[w] for w in A_WNIDS)
    assert a.output_classes[:3] == (6, 11, 13) and r.output_classes[:3] == (1, 2, 4)
    assert list(a.output_classes) == sorted(a.output_classes)  # = Hendrycks' boolean mask
    assert a.sha256 == hashlib.sha256("\n".join(A_WNIDS).encode()).hexdigest()


def test_label_space_file_hash_ignores_comments(tmp_path: Path) -> None:
    one = tmp_path / "one.txt"
    one.write_text(f"# mine\n{SHARK}\n{TENCH}\n")
    two = tmp_path / "two.txt"
    two.write_text(f"{SHARK}\n\n# other comment\n{TENCH}\n")
    space = read_label_space(one)
    assert space == LabelSpace("one.txt", (SHARK, TENCH), (2, 0), space.sha256, str(one))
    assert read_label_space(two).sha256 == space.sha256


def test_read_label_space_errors(tmp_path: Path) -> None:
    unknown = tmp_path / "unknown.txt"
    unknown.write_text(f"{TENCH}\nn99999999\n")
    with pytest.raises(DataError, match="not ImageNet-1k classes: 'n99999999'"):
        read_label_space(unknown)
    with pytest.raises(DataError, match="Did you mean 'imagenet-a'"):
        read_label_space("imagenet_a")
    with pytest.raises(DataError, match="does not exist"):
        read_label_space(tmp_path / "missing.txt")


# ----------------------------------------------------------------------- ImageNet-A and -R


def test_partial_imagenet_a_folder_is_refused_listing_the_missing(tmp_path: Path) -> None:
    root = _wnid_folders(tmp_path / "a", A_WNIDS[:3])
    with pytest.raises(DataError, match=rf"197 listed wnid\(s\) have no folder \('{A_WNIDS[3]}'"):
        open_dataset(root, preprocessing=RGB_16, layout="imagenet-a")


@pytest.mark.parametrize("name", ["imagenet-a", "imagenet-r"])
def test_complete_imagenet_a_and_r_folders(tmp_path: Path, name: str) -> None:
    wnids = A_WNIDS if name == "imagenet-a" else R_WNIDS
    root = _wnid_folders(tmp_path / name, wnids)
    ds = open_dataset(root, preprocessing=RGB_16, layout=name)
    space = read_label_space(name)
    assert ds.kind == name and ds.classes == list(wnids) and len(ds) == 200
    assert ds.targets == list(range(200))
    assert ds.output_classes == space.output_classes and ds.label_space == space
    assert ds.preprocessing_note is None and "argmax" in ds.class_index_note
    for k in (0, 57, 199):
        image, label = ds[k]
        assert label == k and _red(image) == k  # the folder of list position k
    assert open_dataset(root, preprocessing=RGB_16).kind == "image-folder"  # never detected


def test_imagenet_a_folder_with_an_unknown_wnid_or_the_r_classes(tmp_path: Path) -> None:
    root = _wnid_folders(tmp_path / "a", [*A_WNIDS, "n99999999"])
    with pytest.raises(DataError, match=r"1 folder\(s\) are not in the list \('n99999999'\)"):
        open_dataset(root, preprocessing=RGB_16, layout="imagenet-a")
    r_root = _wnid_folders(tmp_path / "r", R_WNIDS)
    with pytest.raises(DataError, match=r"114 listed.*these are the ImageNet-R classes"):
        open_dataset(r_root, preprocessing=RGB_16, layout="imagenet-a")


# ------------------------------------------------------------------- ImageNet-V2 and Sketch


def test_imagenet_v2_labels_are_the_folder_numbers(tmp_path: Path) -> None:
    for number in (2, 10):
        _save(tmp_path / str(number) / "a.jpeg", (number, 0, 0))
    ds = open_dataset(tmp_path, preprocessing=RGB_16, layout="imagenet-v2")
    assert ds.kind == "imagenet-v2" and ds.targets == [2, 10]  # not [1, 0] (string order)
    assert ds.classes == list(imagenet_1k_wnids()) and ds.output_classes is None
    assert [_red(ds[i][0]) for i in range(2)] == [2, 10]
    for bad in ("cat", "1000", "007"):
        _save(tmp_path / bad / "a.png")
        with pytest.raises(DataError, match=f"not ImageNet-1k class indices: '{bad}'"):
            open_dataset(tmp_path, preprocessing=RGB_16, layout="imagenet-v2")
        (tmp_path / bad / "a.png").unlink()
        (tmp_path / bad).rmdir()


def test_imagenet_v2_is_detected_when_all_1000_folders_are_there(tmp_path: Path) -> None:
    for number in range(1000):
        (tmp_path / str(number)).mkdir()
    _save(tmp_path / "10" / "a.png", (10, 0, 0))
    _save(tmp_path / "999" / "b.png", (99, 0, 0))
    ds = open_dataset(tmp_path, preprocessing=RGB_16)
    assert ds.kind == "imagenet-v2" and ds.targets == [10, 999] and len(ds.classes) == 1000


def test_imagenet_sketch_labels_by_imagenet_1k_index(tmp_path: Path) -> None:
    for wnid in (SHARK, "n15075141", TENCH):
        _save(tmp_path / wnid / "sketch_1.JPEG")
    ds = open_dataset(tmp_path, preprocessing=RGB_16, layout="imagenet-sketch")
    assert ds.kind == "imagenet-sketch" and ds.targets == [0, 2, 999]
    assert ds.classes[999] == "n15075141" and len(ds.classes) == 1000
    _save(tmp_path / "n99999999" / "x.png")
    with pytest.raises(DataError, match="not ImageNet-1k wnids: 'n99999999'"):
        open_dataset(tmp_path, preprocessing=RGB_16, layout="imagenet-sketch")


def test_layout_choice_errors(tmp_path: Path) -> None:
    _save(tmp_path / TENCH / "a.png")
    with pytest.raises(DataError, match=r"Unknown data layout 'imagenet-skech'.*imagenet-sketch"):
        open_dataset(tmp_path, preprocessing=RGB_16, layout="imagenet-skech")
    class_map = tmp_path / "map.txt"
    class_map.write_text(f"{TENCH}\n")
    with pytest.raises(DataError, match="does not apply to the imagenet-sketch layout"):
        open_dataset(tmp_path, preprocessing=RGB_16, layout="imagenet-sketch", class_map=class_map)


# ------------------------------------------------------------------------------ ImageNet-C


def _imagenet_c(root: Path, size=(240, 240)) -> Path:
    """gaussian_noise at the top, spatter under extra/; severities 1, 2; 2 classes x 2 images."""
    rng = np.random.default_rng(0)
    for corruption in ("gaussian_noise", "extra/spatter"):
        for severity in (1, 2):
            for wnid in (TENCH, GOLDFISH):
                for k in range(2):
                    path = root / corruption / str(severity) / wnid / f"img{k}.JPEG"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    pixels = rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
                    Image.fromarray(pixels).save(path)
    return root


def test_imagenet_c_members(tmp_path: Path) -> None:
    root = _imagenet_c(tmp_path / "imagenet-c")
    ds = open_dataset(root, preprocessing=RGB_224)
    assert isinstance(ds, CorruptionFamily) and ds.kind == "imagenet-c" and ds.root == root
    assert list(ds.members) == [(c, s) for c in ("gaussian_noise", "spatter") for s in (1, 2)]
    assert ds.corruptions == ("gaussian_noise", "spatter") and ds.severities == (1, 2)
    assert ds.member("fog", 1) is None
    assert ds.missing(["gaussian_noise", "fog"], [1, 2, 3]) == [
        ("gaussian_noise", 3),
        ("fog", 1),
        ("fog", 2),
        ("fog", 3),
    ]
    member = ds.member("spatter", 2)
    assert member is not None and member.root == root / "extra" / "spatter" / "2"
    assert member.targets == ds.targets == [0, 0, 1, 1] and len(ds.classes) == 1000
    assert ds.relative_paths() == [
        f"{wnid}/img{k}.JPEG" for wnid in (TENCH, GOLDFISH) for k in range(2)
    ]
    assert ds.preprocessing_note == (
        "ImageNet-C images (224x224 as released) are centre-cropped to 224x224 without "
        "resizing, as Hendrycks' test script does"
    )
    first = ds.member("gaussian_noise", 1)
    assert first is not None and torch.equal(ds[3][0], first[3][0])


def test_imagenet_c_is_centre_cropped_without_resizing(tmp_path: Path) -> None:
    root = _imagenet_c(tmp_path / "c")
    member = open_dataset(root, preprocessing=RGB_224).member("spatter", 1)
    assert member is not None and not member.preprocessing.resize
    image, label = member[2]
    with Image.open(root / "extra" / "spatter" / "1" / GOLDFISH / "img0.JPEG") as source:
        pixels = np.array(source.convert("RGB"))
    expected = torch.from_numpy(pixels[8:232, 8:232].copy()).permute(2, 0, 1).float() / 255
    assert label == 1 and image.shape == (3, 224, 224) and torch.equal(image, expected)


def test_imagenet_c_members_must_hold_the_same_files(tmp_path: Path) -> None:
    root = _imagenet_c(tmp_path / "c")
    (root / "extra" / "spatter" / "2" / GOLDFISH / "img1.JPEG").rename(
        root / "extra" / "spatter" / "2" / GOLDFISH / "other.JPEG"
    )
    with pytest.raises(DataError, match=rf"member spatter/2 .*lacks '{GOLDFISH}/img1.JPEG'"):
        open_dataset(root, preprocessing=RGB_224)


def test_imagenet_c_layout_errors(tmp_path: Path) -> None:
    root = _imagenet_c(tmp_path / "c", size=(200, 200))
    member = open_dataset(root, preprocessing=RGB_224).member("gaussian_noise", 1)
    assert member is not None
    with pytest.raises(DataError, match=r"img0\.JPEG.*200x200 pixels is smaller than"):
        member[0]
    _save(root / "my_blur" / "1" / TENCH / "a.png")
    with pytest.raises(DataError, match="not ImageNet-C corruptions: 'my_blur'"):
        open_dataset(root, preprocessing=RGB_224)
    bad_severity = tmp_path / "severity"
    _save(bad_severity / "fog" / "9" / TENCH / "a.png")
    with pytest.raises(DataError, match="fog has folders '9'; expected severity folders 1, 2"):
        open_dataset(bad_severity, preprocessing=RGB_224)


def test_restricting_an_imagenet_c_family_restricts_every_member(tmp_path: Path) -> None:
    root = _imagenet_c(tmp_path / "c")
    space_file = tmp_path / "goldfish.txt"
    space_file.write_text(f"{GOLDFISH}\n")
    family = restrict_to_label_space(
        open_dataset(root, preprocessing=RGB_224), read_label_space(space_file)
    )
    assert isinstance(family, CorruptionFamily) and len(family.members) == 4
    member = family.member("spatter", 1)
    assert member is not None and member.targets == [0, 0] and member.output_classes == (1,)
    assert family.output_classes == (1,) and family.relative_paths() == [
        f"{GOLDFISH}/img0.JPEG",
        f"{GOLDFISH}/img1.JPEG",
    ]


# ------------------------------------------------------------------------------ CIFAR-10-C


def _cifar10_c(root: Path, n: int = 10, corruptions=("fog", "saturate")) -> Path:
    """Row r of every corruption file is filled with the value r (+100 for the 2nd file)."""
    root.mkdir(parents=True, exist_ok=True)
    rows = np.arange(5 * n, dtype=np.uint8)
    for j, corruption in enumerate(corruptions):
        images = np.broadcast_to((rows + 100 * j)[:, None, None, None], (5 * n, 32, 32, 3))
        np.save(root / f"{corruption}.npy", np.ascontiguousarray(images))
    np.save(root / "labels.npy", np.tile(np.arange(n) % 10, 5).astype(np.int64))
    return root


def test_cifar10_c_severity_k_is_its_block_of_rows(tmp_path: Path) -> None:
    root = _cifar10_c(tmp_path / "CIFAR-10-C")
    ds = open_dataset(root, preprocessing=RGB_32)
    assert isinstance(ds, CorruptionFamily) and ds.kind == "cifar10-c"
    assert list(ds.members) == [(c, s) for c in ("fog", "saturate") for s in range(1, 6)]
    assert ds.classes[0] == "airplane" and ds.classes[9] == "truck" and len(ds) == 10
    for (corruption, severity), member in ds.members.items():
        offset = 100 if corruption == "saturate" else 0
        assert len(member) == 10 and member.targets == list(range(10))
        for i in (0, 9):
            image, label = member[i]
            assert image.shape == (3, 32, 32) and label == i
            assert torch.all(image * 255 == (severity - 1) * 10 + i + offset)
    assert ds.relative_paths() is None
    member = ds.member("fog", 3)
    assert member is not None
    clone = pickle.loads(pickle.dumps(member))
    assert torch.equal(clone[4][0], member[4][0])
    assert open_dataset(root, preprocessing=RGB_16).member("fog", 5)[0][0].shape == (3, 16, 16)


def test_cifar10_c_errors(tmp_path: Path) -> None:
    root = _cifar10_c(tmp_path / "c")
    labels = np.tile(np.arange(10), 5)
    labels[23] = 7
    np.save(root / "labels.npy", labels)
    with pytest.raises(DataError, match="row 3 of severity 3 is 7 but 3"):
        open_dataset(root, preprocessing=RGB_32)
    np.save(root / "labels.npy", np.tile(np.arange(9), 5))
    with pytest.raises(DataError, match=r"fog\.npy has 50 rows but labels\.npy has 45"):
        open_dataset(root, preprocessing=RGB_32, layout="cifar10-c")
    root = _cifar10_c(tmp_path / "d")
    np.save(root / "fog.npy", np.zeros((50, 32, 32, 3), dtype=np.float32))
    with pytest.raises(DataError, match=r"float32 data of shape.*expected uint8"):
        open_dataset(root, preprocessing=RGB_32)
    root = _cifar10_c(tmp_path / "e")
    np.save(root / "my_noise.npy", np.zeros(3))
    with pytest.raises(DataError, match=r"not CIFAR-10-C corruptions: 'my_noise\.npy'"):
        open_dataset(root, preprocessing=RGB_32)


# ------------------------------------------------------------------- label-space restriction


def test_restrict_an_imagenet_val_folder_to_a_label_space(tmp_path: Path) -> None:
    val = tmp_path / "val"
    _save(val / TENCH / "a.png", (1, 0, 0))
    _save(val / TENCH / "b.png", (2, 0, 0))
    _save(val / GOLDFISH / "c.png", (3, 0, 0))
    _save(val / SHARK / "d.png", (4, 0, 0))
    space_file = tmp_path / "space.txt"
    space_file.write_text(f"# shark first\n{SHARK}\n{TENCH}\n")
    base = open_dataset(val, preprocessing=RGB_16)
    view = restrict_to_label_space(base, read_label_space(space_file))
    assert view.classes == [SHARK, TENCH] and view.output_classes == (2, 0)
    assert len(view) == 3 and view.targets == [1, 1, 0]
    assert [_red(view[i][0]) for i in range(3)] == [1, 2, 4]
    assert view.label_space is not None and view.label_space.name == "space.txt"
    assert view.kind == "image-folder" and "space.txt" in view.class_index_note
    assert isinstance(view, LabelSpaceView)
    assert view.relative_paths() == [f"{TENCH}/a.png", f"{TENCH}/b.png", f"{SHARK}/d.png"]


def test_restrict_errors(tmp_path: Path) -> None:
    _save(tmp_path / "val" / TENCH / "a.png")
    with pytest.raises(DataError, match=r"199 of the 200 wnids.*not classes of dataset"):
        restrict_to_label_space(
            open_dataset(tmp_path / "val", preprocessing=RGB_16),
            LabelSpace.from_wnids("a+tench", (TENCH, *A_WNIDS[:199]), "test"),
        )
    _save(tmp_path / "pets" / "cat" / "a.png")
    with pytest.raises(DataError, match="not ImageNet wnids \\('cat'\\)"):
        restrict_to_label_space(
            open_dataset(tmp_path / "pets", preprocessing=RGB_16), read_label_space("imagenet-a")
        )


def test_crop_only_keeps_the_rest_of_the_preprocessing() -> None:
    crop = RGB_224.crop_only()
    assert crop.input_size == RGB_224.input_size and crop.crop_pct == 0.875 and not crop.resize
    assert Preprocessing((3, 8, 8)).resize
    big = np.arange(10 * 12 * 3, dtype=np.uint8).reshape(10, 12, 3)
    out = Preprocessing((3, 4, 6)).crop_only()(big)
    assert torch.equal(out, torch.from_numpy(big[3:7, 3:9].copy()).permute(2, 0, 1) / 255)
