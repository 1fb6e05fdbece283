"""Finding the samples of a dataset that cannot be read (`robench eval --bad-images skip`), left
out of every perturbation so results stay paired (docs/formats.md, `skipped`). The extra read
costs one pass of data loading, which is why skipping is opt-in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torch.utils.data import DataLoader, Dataset

from robench._core.batching import batch_indices
from robench._core.errors import ConfigError, DataError
from robench._core.progress import NoProgress, Progress

BAD_IMAGE_POLICIES = ("stop", "skip")

_CHUNK = 64  # samples per probe batch (and per progress update)


@dataclass(frozen=True)
class Unreadable:
    """A sample left out of the evaluation, and why (the reader's sentence, naming the file)."""

    index: int
    reason: str


class _Probe(Dataset):
    """Reads a sample and returns None, or the index and the reader's error."""

    def __init__(self, dataset: Any) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Unreadable | None:
        try:
            self.dataset[index]
        except DataError as exc:  # an image's own sentence names its file, without the fix
            return Unreadable(index, getattr(exc, "reason", str(exc)))
        return None


def check_bad_image_policy(policy: str) -> None:
    if policy not in BAD_IMAGE_POLICIES:
        raise ConfigError(
            f"--bad-images {policy!r} is not a policy; pass stop (an unreadable image stops "
            "the run, the default) or skip (leave it out and list it in the report)."
        )


def find_unreadable(
    dataset: Any,
    indices: Sequence[int],
    *,
    workers: int = 0,
    progress: Progress | None = None,
    name: str = "reading images",
) -> list[Unreadable]:
    """The samples of `indices` that `dataset` cannot read, in index order."""
    chunks = batch_indices(indices, _CHUNK)
    loader = DataLoader(_Probe(dataset), batch_sampler=chunks, num_workers=workers, collate_fn=list)
    progress = progress or NoProgress()
    progress.start(name, len(indices), 0)
    found: list[Unreadable] = []
    for chunk, results in zip(chunks, loader, strict=True):
        found += [result for result in results if result is not None]
        progress.advance(len(chunk))
    progress.finish()
    return found
