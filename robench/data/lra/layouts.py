"""The five LRA tasks as a table, `open_lra` over it, and the openers robench.data registers
as the layouts `lra-listops` ... `lra-pathfinder`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from robench._core.errors import ConfigError, DataError
from robench._core.registry import did_you_mean
from robench.data.lra.aan import looks_like_aan, open_aan
from robench.data.lra.cifar10_grey import looks_like_cifar10_binary, open_cifar10_grey
from robench.data.lra.imdb import looks_like_aclimdb, open_imdb
from robench.data.lra.listops import looks_like_listops, open_listops
from robench.data.lra.pathfinder import looks_like_pathfinder, open_pathfinder
from robench.data.lra.sequences import SequenceDataset

Reader = Callable[[Path, str, "int | None", "bool | None"], SequenceDataset]


@dataclass(frozen=True)
class LraTask:
    """One LRA task's data: its layout name, reader and folder."""

    # The data layout's name in robench.data's table.
    layout: str
    # Reads (root, split, max_length, truncate); readers take canonical split names.
    reader: Reader
    # Does a folder look like this task's release? None: chosen by name only.
    detect: Callable[[Path], bool] | None
    # The released files, for messages and `Layout.shape`.
    shape: str


LRA_TASKS: dict[str, LraTask] = {
    "listops": LraTask(
        "lra-listops", open_listops, looks_like_listops, "ROOT/basic_{train,val,test}.tsv"
    ),
    "text": LraTask(
        "lra-text", open_imdb, looks_like_aclimdb, "ROOT/{train,test}/{neg,pos}/*.txt (aclImdb)"
    ),
    "retrieval": LraTask(
        "lra-retrieval", open_aan, looks_like_aan, "ROOT/new_aan_pairs.{train,eval,test}.tsv"
    ),
    "image": LraTask(
        "lra-image",
        open_cifar10_grey,
        looks_like_cifar10_binary,
        "ROOT/data_batch_{1..5}.bin + ROOT/test_batch.bin (CIFAR-10 binary), or "
        "ROOT/{train,test}/<class>/<image>",
    ),
    "pathfinder": LraTask(
        "lra-pathfinder",
        open_pathfinder,
        looks_like_pathfinder,
        "ROOT/<difficulty>/imgs/<n>/*.png + ROOT/<difficulty>/metadata/<n>.npy",
    ),
}
BY_LAYOUT = {task.layout: name for name, task in LRA_TASKS.items()}

# Split names -> the canonical "train", "val", "test" (LRA calls validation "val" for ListOps
# and "eval" for AAN).
SPLITS = {"train": "train", **dict.fromkeys(("val", "valid", "validation", "eval", "dev"), "val")}
SPLITS["test"] = "test"


def task_of(name: str) -> str:
    """The LRA task `name` means (a task name or its layout's), or a ConfigError."""
    found = name if name in LRA_TASKS else BY_LAYOUT.get(name)
    if found is None:
        raise ConfigError(did_you_mean(name, [*LRA_TASKS, *BY_LAYOUT], "LRA task"))
    return found


def _checked_length(max_length: int | None) -> int | None:
    if max_length is not None and (isinstance(max_length, bool) or max_length < 1):
        raise ConfigError(f"max_length must be a positive integer, not {max_length!r}.")
    return max_length


def open_lra(
    path: str | Path,
    task_name: str,
    split: str = "test",
    max_length: int | None = None,
    *,
    truncate: bool | None = None,
    difficulty: str | None = None,
) -> SequenceDataset:
    """One split of an LRA task's data at `path` (a key of LRA_TASKS or its layout's name), in
    the layout the LRA release uses. `max_length` (L, None: the task's default), `truncate`
    (None: cut Text and Retrieval documents as LRA does) and `difficulty` (Pathfinder's
    folder): docs/datasets.md, "Long Range Arena"."""
    name = task_of(task_name)
    canonical = SPLITS.get(split)
    if canonical is None:
        raise ConfigError(did_you_mean(split, list(SPLITS), "split"))
    if difficulty is not None and name != "pathfinder":
        raise ConfigError(f"difficulty applies to Pathfinder only, not to {name}; leave it out.")
    root = Path(path)
    if not root.is_dir():
        what = "is a file" if root.exists() else "does not exist"
        raise DataError(
            f"LRA {name} data path {root} {what}; pass the folder that holds "
            f"{LRA_TASKS[name].shape}."
        )
    if name == "pathfinder":
        return open_pathfinder(root, canonical, _checked_length(max_length), truncate, difficulty)
    return LRA_TASKS[name].reader(root, canonical, _checked_length(max_length), truncate)


def detect_lra(root: Path) -> str | None:
    """The LRA task whose released layout ROOT looks like, or None."""
    for name, task in LRA_TASKS.items():
        if task.detect is not None and root.is_dir() and task.detect(root):
            return name
    return None
