"""The LRA readers on files a fixture writes in the released layouts (random content, nothing
tuned to the reader), and their answers to bad files: one sentence, exit 2, nothing written."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from robench._core.errors import EXIT_USAGE, ConfigError, DataError
from robench.data import open_dataset
from robench.data.lra import SEQUENCE_TASK, SequenceDataset, detect_lra, open_lra
from robench.data.lra.listops import VOCABULARY
from tests.hostile import refused, snapshot
from tests.lra_fixtures import (
    bad_listops,
    listops_too_long,
    pathfinder_without_metadata,
    retrieval_with_one_document,
    write_aan,
    write_aclimdb,
    write_cifar_binary,
    write_listops,
    write_pathfinder_release,
)
from tests.lra_oracles import parse


def _grey_oracle(rgb: np.ndarray) -> np.ndarray:
    """tf.image.rgb_to_grayscale on uint8, channel by channel in float32 (an order of
    operations other than the reader's matrix product)."""
    x = torch.from_numpy(rgb.astype(np.float32)) * torch.tensor(1 / 255, dtype=torch.float32)
    grey = x[..., 0] * 0.2989 + x[..., 1] * 0.5870 + x[..., 2] * 0.1140
    return (grey * 255.5).to(torch.uint8).numpy()


# ---------------------------------------------------------------------------------------------
# Readers.


def _contract(dataset: SequenceDataset, task_name: str, kind: str) -> None:
    assert dataset.task == SEQUENCE_TASK and dataset.task_name == task_name
    assert dataset.kind == kind and dataset.num_classes == len(dataset.classes)
    assert len(dataset) == len(dataset.targets) > 0
    for i in range(len(dataset)):
        tokens, label = dataset[i]
        assert tokens.dtype == torch.long
        shape = (2, dataset.max_length) if dataset.pair else (dataset.max_length,)
        assert tokens.shape == shape
        assert int(tokens.min()) >= 0 and int(tokens.max()) < dataset.vocab_size
        assert isinstance(label, int) and label == dataset.targets[i]


def test_listops_tokens_and_labels(tmp_path: Path) -> None:
    written = write_listops(tmp_path)
    for split, rows in written.items():
        dataset = open_lra(tmp_path, "listops", split)
        _contract(dataset, "listops", "lra-listops")
        assert (dataset.vocab_size, dataset.max_length, dataset.pad_id) == (16, 2000, 0)
        assert dataset.classes == [str(d) for d in range(10)] and not dataset.pair
        for i, (source, value) in enumerate(rows):
            tokens, label = dataset[i]
            expected = [VOCABULARY.index(t) for t in source.split() if t not in "()"]
            assert tokens[: len(expected)].tolist() == expected
            assert not tokens[len(expected) :].any()  # padded with 0
            assert label == value


def test_listops_longer_than_max_length_is_refused_unless_truncated(tmp_path: Path) -> None:
    rows = write_listops(tmp_path)["test"]
    longest = max(parse(s)[1] for s, _ in rows)
    with pytest.raises(DataError, match=r"basic_test\.tsv line \d+ is \d+ tokens long"):
        open_lra(tmp_path, "listops", "test", max_length=longest - 1)
    cut = open_lra(tmp_path, "listops", "test", max_length=longest - 1, truncate=True)
    assert cut.max_length == longest - 1 and len(cut) == len(rows)


def test_text_is_bytes_plus_one(tmp_path: Path) -> None:
    reviews = write_aclimdb(tmp_path)
    for split, rows in (("train", reviews["train"]), ("test", reviews["test"])):
        for root in (tmp_path, tmp_path / "aclImdb"):
            dataset = open_lra(root, "text", split)
            _contract(dataset, "text", "lra-text")
            assert (dataset.vocab_size, dataset.max_length, dataset.pad_id) == (257, 4000, 0)
            assert dataset.classes == ["neg", "pos"] and dataset.targets == [lab for _, lab in rows]
            for i, (text, _) in enumerate(rows):
                tokens = dataset[i][0]
                assert tokens[: len(text)].tolist() == [b + 1 for b in text]
                assert not tokens[len(text) :].any()
    # IMDb has no validation split: LRA validates on test.
    assert open_lra(tmp_path, "text", "val").targets == open_lra(tmp_path, "text", "test").targets


def test_text_is_cut_at_the_default_length_as_lra_does(tmp_path: Path) -> None:
    reviews = write_aclimdb(tmp_path)
    long_review = tmp_path / "aclImdb" / "test" / "pos" / "999_10.txt"
    long_review.write_bytes(b"x" * 4500)
    dataset = open_lra(tmp_path, "text", "test")
    assert dataset[len(dataset) - 1][0].tolist() == [ord("x") + 1] * 4000
    assert dataset.preprocessing_note and "1 of" in dataset.preprocessing_note
    assert len(dataset) == len(reviews["test"]) + 1
    with pytest.raises(DataError, match=r"999_10\.txt is 4500 tokens long"):
        open_lra(tmp_path, "text", "test", max_length=4000)


def test_retrieval_pairs(tmp_path: Path) -> None:
    pairs = write_aan(tmp_path)
    for split, rows in pairs.items():
        dataset = open_lra(tmp_path, "retrieval", split, max_length=256)
        _contract(dataset, "retrieval", "lra-retrieval")
        assert dataset.pair and dataset.vocab_size == 257 and dataset.pad_id == 0
        for i, (label, one, two) in enumerate(rows):
            tokens, read_label = dataset[i]
            assert read_label == label
            for row, text in zip(tokens, (one, two), strict=True):
                assert row[: len(text)].tolist() == [b + 1 for b in text]
                assert not row[len(text) :].any()
    assert open_lra(tmp_path, "retrieval", "test").max_length == 4000  # LRA's default


def test_cifar10_binary_is_lras_grey_scale(tmp_path: Path) -> None:
    files = write_cifar_binary(tmp_path / "cifar-10-batches-bin")
    train = np.concatenate([files[f"data_batch_{i}.bin"] for i in range(1, 6)])
    expected = {"train": train[:90], "val": train[90:], "test": files["test_batch.bin"]}
    for split, records in expected.items():
        dataset = open_lra(tmp_path, "image", split)
        _contract(dataset, "image", "lra-image")
        assert (dataset.vocab_size, dataset.max_length, dataset.pad_id) == (256, 1024, None)
        assert dataset.targets == records[:, 0].tolist()
        rgb = records[:, 1:].reshape(-1, 3, 1024).transpose(0, 2, 1)
        oracle = _grey_oracle(rgb)
        read = torch.stack([dataset[i][0] for i in range(len(dataset))]).numpy()
        assert np.abs(read - oracle).max() <= 1  # float32 sums in another order
        assert (read == oracle).mean() > 0.999
    assert open_lra(tmp_path, "image", "test").classes[0] == "airplane"


def test_cifar10_grey_levels_of_known_colours(tmp_path: Path) -> None:
    colours = [(255, 255, 255), (255, 0, 0), (0, 255, 0), (0, 0, 255), (0, 0, 0), (197, 0, 0)]
    # trunc(255.5 * (0.2989 r + 0.587 g + 0.114 b) / 255), worked by hand. White is 255, not
    # 254 (the 255.5), green 149, not 150 (truncated), and r = 197 gives 58.999.. -> 58, where
    # the textbook 0.299 would give 59.
    grey = [255, 76, 149, 29, 0, 58]
    records = bytearray()
    for r, g, b in colours:
        records += bytes([3]) + bytes([r]) * 1024 + bytes([g]) * 1024 + bytes([b]) * 1024
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        (tmp_path / name).write_bytes(bytes(records))
    dataset = open_lra(tmp_path, "image", "test")
    assert [int(dataset[i][0][0]) for i in range(len(colours))] == grey
    assert all(bool((dataset[i][0] == dataset[i][0][0]).all()) for i in range(len(colours)))


def test_cifar10_image_folder(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    images = {}
    for split, per_class in (("train", 12), ("test", 3)):
        for name in ("cat", "airplane", "dog"):
            (tmp_path / split / name).mkdir(parents=True)
            for i in range(per_class):
                rgb = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
                Image.fromarray(rgb).save(tmp_path / split / name / f"{i:03d}.png")
                images[(split, name, i)] = rgb
    classes = ["airplane", "cat", "dog"]
    val = open_lra(tmp_path, "image", "val")
    train = open_lra(tmp_path, "image", "train")
    test = open_lra(tmp_path, "image", "test")
    assert val.classes == train.classes == classes
    assert (len(train), len(val), len(test)) == (33, 3, 9)  # every tenth training image is val
    assert val.targets == [0, 1, 2]
    for label, name in enumerate(classes):
        expected = _grey_oracle(images[("train", name, 9)]).reshape(-1)
        assert np.abs(val[label][0].numpy() - expected).max() <= 1


def test_pathfinder_release_layout(tmp_path: Path) -> None:
    order = write_pathfinder_release(tmp_path / "pathfinder32", files=3, per_file=10)
    splits = {"train": order[:24], "val": order[24:27], "test": order[27:]}
    for root in (tmp_path, tmp_path / "pathfinder32", tmp_path / "pathfinder32" / "curv_baseline"):
        for split, expected in splits.items():
            dataset = open_lra(root, "pathfinder", split)
            _contract(dataset, "pathfinder", "lra-pathfinder")
            assert (dataset.vocab_size, dataset.max_length, dataset.pad_id) == (256, 1024, None)
            assert dataset.targets == [label for _, label in expected]
            for i, (pixels, _) in enumerate(expected):
                assert dataset[i][0].tolist() == pixels.reshape(-1).tolist()


def test_pathfinder_picks_the_hardest_difficulty_unless_told(tmp_path: Path) -> None:
    write_pathfinder_release(tmp_path, files=1, per_file=10, seed=0)
    hard = tmp_path / "curv_contour_length_14"
    (tmp_path / "curv_baseline").rename(hard)
    write_pathfinder_release(tmp_path, files=1, per_file=10, seed=1)
    assert open_lra(tmp_path, "pathfinder", "train").root == tmp_path
    chosen = open_lra(tmp_path, "pathfinder", "train")
    told = open_lra(tmp_path, "pathfinder", "train", difficulty="curv_baseline")
    assert chosen.preprocessing_note == "Pathfinder difficulty curv_contour_length_14"
    assert told.preprocessing_note == "Pathfinder difficulty curv_baseline"
    with pytest.raises(ConfigError, match="unknown Pathfinder difficulty"):
        open_lra(tmp_path, "pathfinder", "train", difficulty="hard")


def test_pathfinder_skips_empty_images_as_lra_does(tmp_path: Path) -> None:
    order = write_pathfinder_release(tmp_path, files=1, per_file=10)
    (tmp_path / "curv_baseline" / "imgs" / "0" / "sample_3.png").write_bytes(b"")
    kept = order[:3] + order[4:]
    read = [
        t for s in ("train", "val", "test") for t in open_lra(tmp_path, "pathfinder", s).targets
    ]
    assert read == [label for _, label in kept]


def test_pathfinder_metadata_as_a_numpy_array_of_strings(tmp_path: Path) -> None:
    order = write_pathfinder_release(tmp_path, files=1, per_file=10)
    metadata = tmp_path / "curv_baseline" / "metadata" / "0.npy"
    rows = [line.split() for line in metadata.read_text().splitlines()]
    np.save(metadata, np.array(rows))  # as Linsley's generator saves it: strings, no pickle
    assert metadata.read_bytes().startswith(b"\x93NUMPY")
    assert open_lra(tmp_path, "pathfinder", "train").targets == [lab for _, lab in order[:8]]


def test_pathfinder_metadata_of_python_objects_is_not_unpickled(tmp_path: Path) -> None:
    write_pathfinder_release(tmp_path, files=1, per_file=10)
    metadata = tmp_path / "curv_baseline" / "metadata" / "0.npy"
    rows = [line.split() for line in metadata.read_text().splitlines()]
    np.save(metadata, np.array(rows, dtype=object), allow_pickle=True)
    with pytest.raises(DataError, match="does not unpickle"):
        open_lra(tmp_path, "pathfinder", "train")


def test_detected_layouts_open_as_sequence_data(tmp_path: Path) -> None:
    write_listops(tmp_path / "listops")
    write_aclimdb(tmp_path / "imdb")
    write_aan(tmp_path / "aan")
    write_cifar_binary(tmp_path / "cifar")
    write_pathfinder_release(tmp_path / "pathfinder32")
    expected = {
        "listops": "listops",
        "imdb": "text",
        "aan": "retrieval",
        "cifar": "image",
        "pathfinder32": "pathfinder",
    }
    for folder, task_name in expected.items():
        assert detect_lra(tmp_path / folder) == task_name
        dataset = open_dataset(tmp_path / folder, preprocessing=None)  # type: ignore[arg-type]
        assert isinstance(dataset, SequenceDataset) and dataset.task_name == task_name
        by_name = open_dataset(tmp_path / folder, preprocessing=None, layout=f"lra-{task_name}")  # type: ignore[arg-type]
        assert by_name.task_name == task_name


def test_an_image_folder_is_still_an_image_folder(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        Image.fromarray(np.zeros((8, 8), dtype=np.uint8)).save(tmp_path / name / "0.png")
    assert detect_lra(tmp_path) is None


def test_open_lra_names_and_splits(tmp_path: Path) -> None:
    write_aan(tmp_path)
    assert len(open_lra(tmp_path, "lra-retrieval", "eval")) == 6
    with pytest.raises(ConfigError, match="Did you mean 'retrieval'"):
        open_lra(tmp_path, "retreival")
    with pytest.raises(ConfigError, match="Unknown split 'tset'"):
        open_lra(tmp_path, "retrieval", "tset")
    with pytest.raises(ConfigError, match="difficulty applies to Pathfinder only"):
        open_lra(tmp_path, "retrieval", difficulty="curv_baseline")
    with pytest.raises(ConfigError, match="max_length must be a positive integer"):
        open_lra(tmp_path, "retrieval", max_length=0)


# ---------------------------------------------------------------------------------------------
# Bad input: one sentence naming the file (and line), exit 2, nothing written.


BAD_INPUTS = {
    "listops-unparseable": ("listops", bad_listops),
    "pathfinder-no-metadata": ("pathfinder", pathfinder_without_metadata),
    "retrieval-one-document": ("retrieval", retrieval_with_one_document),
    "listops-too-long": ("listops", listops_too_long),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_files_are_one_sentence_and_exit_2(case: str, tmp_path: Path) -> None:
    task_name, write = BAD_INPUTS[case]
    root = tmp_path / "data"
    phrase = write(root)
    before = snapshot(tmp_path)
    with pytest.raises(DataError) as caught:
        open_lra(root, task_name, "test")
    message = str(caught.value)
    assert phrase in message and str(root) in message
    assert "\n" not in message and message.endswith(".")
    assert caught.value.exit_code == EXIT_USAGE
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_files_through_robench_eval(case: str, tmp_path: Path) -> None:
    """The same files given to `robench eval` (the layout detected or named by the suite):
    exit 2, one error line, no report, nothing changed."""
    task_name, write = BAD_INPUTS[case]
    root = tmp_path / "data"
    phrase = write(root)
    suite = tmp_path / "suite.toml"
    suite.write_text(
        'name = "s"\nversion = 1\n\n[datasets.default]\n'
        f'layout = "lra-{task_name}"\n\n[[perturbations]]\nkind = "clean"\n'
    )
    out = tmp_path / "out" / "r.json"
    args = ["eval", "vit_nano_fmnist", "-s", suite, "-d", root, "-o", out]
    refused(args, tmp_path, phrase.split(" line")[0])
    assert not out.parent.exists()


def test_an_image_model_on_lra_data_is_told_what_the_data_is(tmp_path: Path) -> None:
    write_listops(tmp_path / "data")
    suite = tmp_path / "suite.toml"
    suite.write_text('name = "s"\nversion = 1\n\n[[perturbations]]\nkind = "clean"\n')
    args = [
        "eval",
        "vit_nano_fmnist",
        "-s",
        suite,
        "-d",
        tmp_path / "data",
        "-o",
        tmp_path / "r.json",
    ]
    refused(args, tmp_path, "is sequence-classification data")


def test_cifar10_python_version_is_refused_not_unpickled(tmp_path: Path) -> None:
    (tmp_path / "data_batch_1").write_bytes(struct.pack("<I", 0))
    with pytest.raises(DataError, match="never unpickles"):
        open_lra(tmp_path, "image", "train")


def test_items_that_are_files_name_them(tmp_path: Path) -> None:
    write_aclimdb(tmp_path / "imdb")
    write_pathfinder_release(tmp_path / "pf", files=1, per_file=10)
    write_listops(tmp_path / "listops")
    text = open_lra(tmp_path / "imdb", "text", "test")
    paths = text.relative_paths()
    assert paths is not None and len(paths) == len(text)
    assert all(p.startswith("aclImdb/test/") and p.endswith(".txt") for p in paths)
    assert open_lra(tmp_path / "pf", "pathfinder", "test").relative_paths() == [
        "curv_baseline/imgs/0/sample_9.png"
    ]
    assert open_lra(tmp_path / "listops", "listops").relative_paths() is None


def test_pathfinder_metadata_must_name_images_inside_the_folder(tmp_path: Path) -> None:
    write_pathfinder_release(tmp_path, files=1, per_file=10)
    metadata = tmp_path / "curv_baseline" / "metadata" / "0.npy"
    lines = metadata.read_text().splitlines()
    for broken, phrase in (
        ("imgs/0 sample_77.png 77 1", "line 3 names .* which is not a file"),
        ("../../etc passwd 0 1", "line 3 names ../../etc/passwd, outside"),
        ("imgs/0 sample_2.png 2 yes", "line 3 is 'imgs/0 sample_2.png 2 yes'"),
    ):
        metadata.write_text("\n".join([*lines[:2], broken, *lines[3:]]) + "\n")
        with pytest.raises(DataError, match=phrase):
            open_lra(tmp_path, "pathfinder", "train")


def test_pathfinder_difficulty_that_is_not_there(tmp_path: Path) -> None:
    write_pathfinder_release(tmp_path, files=1, per_file=10)
    folder = tmp_path / "curv_baseline"
    with pytest.raises(DataError, match="no curv_contour_length_14 folder"):
        open_lra(folder, "pathfinder", "train", difficulty="curv_contour_length_14")
    with pytest.raises(DataError, match="no curv_contour_length_9 folder"):
        open_lra(tmp_path, "pathfinder", "train", difficulty="curv_contour_length_9")
