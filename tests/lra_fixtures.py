"""LRA data in the released layouts, written with random content (nothing tuned to the
readers), and the same layouts with one thing wrong: the fixtures of tests/test_lra_readers.py
and of docs/errors.md's LRA rows (tests/test_error_catalogue.py)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from PIL import Image

from tests.lra_oracles import parse, random_expression


def write_listops(
    root: Path, seed: int = 0, rows: int = 12, max_tokens: int | None = None
) -> dict[str, list[tuple[str, int]]]:
    """basic_{train,val,test}.tsv of random expressions (LRA's print) and their values;
    `max_tokens` bounds an expression's length (parentheses not counted: the readers drop
    them), as LRA's generator bounds its lengths, by drawing again."""
    rng = random.Random(seed)
    written = {}
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val", "test"):
        data = []
        while len(data) < rows:
            source = random_expression(rng)
            value, length, _, _ = parse(source)
            if max_tokens is None or length <= max_tokens:
                data.append((source, value))
        lines = ["Source\tTarget", *(f"{s}\t{v}" for s, v in data)]
        (root / f"basic_{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        written[split] = data
    return written


def _text(rng: random.Random, size: int) -> str:
    alphabet = "abcdefgh ijklmnop. é€<br />😀"  # multi-byte characters: tokens are bytes
    return "".join(rng.choice(alphabet) for _ in range(size))


def write_aclimdb(root: Path, seed: int = 0) -> dict[str, list[tuple[bytes, int]]]:
    """aclImdb/{train,test}/{neg,pos}/<id>_<rating>.txt; the reviews in reading order."""
    rng = random.Random(seed)
    reviews: dict[str, list[tuple[bytes, int]]] = {}
    for split in ("train", "test"):
        reviews[split] = []
        for name in ("neg", "pos"):
            folder = root / "aclImdb" / split / name
            folder.mkdir(parents=True)
            for i in rng.sample(range(100), 4):
                text = _text(rng, rng.randint(0, 300)).encode()
                (folder / f"{i}_{rng.randint(1, 10)}.txt").write_bytes(text)
        for label, name in enumerate(("neg", "pos")):
            folder = root / "aclImdb" / split / name
            for path in sorted(folder.iterdir(), key=lambda p: p.name):
                reviews[split].append((path.read_bytes(), label))
    (root / "aclImdb" / "train" / "unsup").mkdir()
    (root / "aclImdb" / "train" / "unsup" / "0_0.txt").write_text("not read")
    return reviews


def write_aan(
    root: Path, seed: int = 0, pairs_per_split: int = 6
) -> dict[str, list[tuple[int, bytes, bytes]]]:
    """new_aan_pairs.{train,eval,test}.tsv: label, id1, id2, text1, text2 (no header)."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    pairs = {}
    for split, name in (("train", "train"), ("val", "eval"), ("test", "test")):
        rows = []
        for _ in range(pairs_per_split):
            label = rng.randint(0, 1)
            one, two = (_text(rng, rng.randint(1, 200)) for _ in range(2))
            rows.append((label, one.encode(), two.encode()))
        lines = [
            f"{float(lab)}\tP{i}-A\tP{i}-B\t{a.decode()}\t{b.decode()}"
            for i, (lab, a, b) in enumerate(rows)
        ]
        (root / f"new_aan_pairs.{name}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        pairs[split] = rows
    return pairs


def write_cifar_binary(root: Path, records: int = 20, seed: int = 0) -> dict[str, np.ndarray]:
    """data_batch_{1..5}.bin and test_batch.bin of random records; the records per file."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    files = {}
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        labels = rng.integers(0, 10, (records, 1), dtype=np.uint8)
        pixels = rng.integers(0, 256, (records, 3072), dtype=np.uint8)
        data = np.concatenate([labels, pixels], axis=1)
        (root / name).write_bytes(data.tobytes())
        files[name] = data
    return files


def write_pathfinder_release(
    root: Path, files: int = 3, per_file: int = 5, seed: int = 0
) -> list[tuple[np.ndarray, int]]:
    """curv_baseline/imgs/<n>/sample_<i>.png + metadata/<n>.npy as text lines (11 fields);
    the (pixels, label) of each image in metadata order."""
    rng = np.random.default_rng(seed)
    folder = root / "curv_baseline"
    (folder / "metadata").mkdir(parents=True)
    order = []
    for n in [0, 1, 10][:files]:  # 10 after 1 and not before 2: files sort by number
        (folder / "imgs" / str(n)).mkdir(parents=True)
        lines = []
        for i in range(per_file):
            pixels = rng.integers(0, 256, (32, 32), dtype=np.uint8)
            label = int(rng.integers(0, 2))
            Image.fromarray(pixels).save(folder / "imgs" / str(n) / f"sample_{i}.png")
            lines.append(f"imgs/{n} sample_{i}.png {i} {label} 1.0 6 2 2 0.5 1 1")
            order.append((pixels, label))
        (folder / "metadata" / f"{n}.npy").write_text("\n".join(lines) + "\n")
    return order


# Bad input: each writes a layout with one thing wrong and returns the phrase its error has.


def bad_listops(root: Path) -> str:
    write_listops(root)
    lines = (root / "basic_test.tsv").read_text().splitlines()
    lines[2] = "( ( [MAX 3 ) ( [MIN 4 ) ] )\t3"  # [MIN is never closed
    (root / "basic_test.tsv").write_text("\n".join(lines) + "\n")
    return "basic_test.tsv line 3 is not a ListOps expression"


def pathfinder_without_metadata(root: Path) -> str:
    write_pathfinder_release(root, files=1)
    for path in (root / "curv_baseline" / "metadata").iterdir():
        path.unlink()
    return "has no metadata"


def retrieval_with_one_document(root: Path) -> str:
    write_aan(root)
    path = root / "new_aan_pairs.test.tsv"
    lines = path.read_text().splitlines()
    lines[3] = "\t".join(lines[3].split("\t")[:4])  # label, ids and one text
    path.write_text("\n".join(lines) + "\n")
    return (
        "new_aan_pairs.test.tsv line 4 has 4 tab-separated fields, so it is not a label and two "
        "documents"
    )


def listops_too_long(root: Path) -> str:
    write_listops(root)
    # One operator over 2003 digits: 2005 tokens, over LRA's 2000.
    long = "( [SM " + " ".join(str(i % 10) for i in range(2003)) + " ] )"
    with (root / "basic_test.tsv").open("a") as handle:
        handle.write(f"{long}\t{parse(long)[0]}\n")
    return "basic_test.tsv line 14 is 2005 tokens long, longer than max_length 2000"
