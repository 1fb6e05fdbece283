"""The datasets robench knows by name (`fashion-mnist`), and where each is installed.

A module of its own, below every reader, so that a reader can tell a built-in image name
from its own kind of data (a text corpus given an image name) without importing the package.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BuiltinDataset:
    """A dataset robench knows by name."""

    # Where the Debian package installs the data.
    default_path: Path
    # Environment variable that points robench at another copy (e.g. a non-Debian machine).
    env_var: str
    # How to install it when it is missing (the end of an error message).
    install_hint: str

    @property
    def path(self) -> Path:
        """The environment variable's directory when set, else the default location."""
        return Path(os.environ.get(self.env_var) or self.default_path)


BUILTIN_DATASETS: dict[str, BuiltinDataset] = {
    "fashion-mnist": BuiltinDataset(
        default_path=Path("/usr/share/datasets/fashion-mnist"),
        env_var="ROBENCH_FASHION_MNIST_DIR",
        install_hint="run `make data` or `apt-get install dataset-fashion-mnist`, or set "
        "ROBENCH_FASHION_MNIST_DIR to a directory of its IDX files",
    ),
}
