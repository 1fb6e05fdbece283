"""TEMPORARY stand-in for lra-data's `robench.data.lra` (issue 38 item 1, another branch):
a tiny reader of the contract the sequence-classification task codes to. Tests swap it in
for `robench.data.lra` (`module()`, with monkeypatch), so they test the task, models, training
and perturbations on data written here, whether or not the real readers are merged; the real
readers have their own tests (lra-data's branch).

Contract: `open_lra(path, task_name, split, max_length=None) -> SequenceDataset`, items
`(tokens, label)` with tokens int64 (L,) or (2, L) for retrieval pairs; attributes
vocab_size, max_length, num_classes, classes, pad_id, pair, task_name.

The stand-in's files: `ROOT/<split>.tsv`, one sample per line, `label<TAB>ids` with ids
space-separated (retrieval: `label<TAB>ids<TAB>ids`); every task pads with id 0 except image
and pathfinder (fixed length, no padding).
"""

from __future__ import annotations

import random
import types
from pathlib import Path

import torch

from robench._core.errors import DataError

VOCAB = {"listops": 16, "text": 64, "retrieval": 64, "image": 256, "pathfinder": 256}
CLASSES = {"listops": 10, "text": 2, "retrieval": 2, "image": 10, "pathfinder": 2}


class StandInSequences:
    def __init__(self, rows: list[tuple[list[torch.Tensor], int]], task_name: str) -> None:
        self.task_name = task_name
        self.pair = task_name == "retrieval"
        self.pad_id = None if task_name in ("image", "pathfinder") else 0
        self.vocab_size = VOCAB[task_name]
        self.num_classes = CLASSES[task_name]
        self.classes = [str(i) for i in range(self.num_classes)]
        self.labels = [label for _, label in rows]
        self.max_length = max(len(doc) for docs, _ in rows for doc in docs)
        self.items = []
        for docs, label in rows:
            padded = [torch.nn.functional.pad(d, (0, self.max_length - len(d))) for d in docs]
            self.items.append((torch.stack(padded) if self.pair else padded[0], label))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return self.items[index]


def open_lra(path, task_name: str, split: str, max_length: int | None = None):
    file = Path(path) / f"{split}.tsv"
    if not file.is_file():
        raise DataError(f"{file} does not exist; pass a folder with {split}.tsv.")
    rows = []
    for line in file.read_text().splitlines():
        label, *docs = line.split("\t")
        rows.append(([torch.tensor([int(t) for t in d.split()]) for d in docs], int(label)))
    return StandInSequences(rows, task_name)


def module() -> types.ModuleType:
    """A stand-in `robench.data.lra` module; tests put it in sys.modules with monkeypatch
    (so they read the stand-in's files even once the real package is merged)."""
    found = types.ModuleType("robench.data.lra")
    found.open_lra = open_lra  # type: ignore[attr-defined]
    return found


def write_split(
    root: Path,
    split: str,
    n: int,
    seed: int,
    *,
    task: str = "listops",
    length: tuple[int, int] = (20, 60),
) -> Path:
    """`n` samples of a learnable toy rule: label = (count of token 3) mod K (2 for binary
    tasks), sequences of random lengths in `length` (fixed length for pixel tasks)."""
    rng = random.Random(seed)
    k, vocab = CLASSES[task], VOCAB[task]
    lines = []
    for _ in range(n):
        docs = []
        for _ in range(2 if task == "retrieval" else 1):
            size = length[1] if task in ("image", "pathfinder") else rng.randint(*length)
            docs.append([rng.randrange(1, vocab) for _ in range(size)])
        label = sum(d.count(3) for d in docs) % k
        lines.append("\t".join([str(label), *(" ".join(map(str, d)) for d in docs)]))
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return root
