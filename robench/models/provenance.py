"""Where a model's weights came from, for the report's `model.source` (docs/models.md,
"Provenance in the report"): a source (`hf-hub:`, `local-dir:`, `hf:`, a timm pretrained tag)
has no `--checkpoint`, so its `ModelOrigin` names the exact files read instead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robench.models.hashing import sha256_file

# Weight files, by how their names end: safetensors first (no code runs when reading them).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pth", ".pt", ".pth.tar", ".ckpt")


@dataclass
class ModelOrigin:
    """What a source read; becomes the report's `model.source` section."""

    source: str  # the source's registered prefix: "hf-hub", "local-dir", "hf", "timm"
    location: str  # the repo id or the folder's path
    commit: str | None = None  # the Hub cache's commit hash (snapshot folder name)
    revision: str | None = None  # the branch, tag or commit asked for
    weights: dict[str, str] = field(default_factory=dict)  # weight file name -> sha256
    files: dict[str, str] = field(default_factory=dict)  # other files read -> sha256
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. tokenizer_sha256, library

    @property
    def sha256(self) -> str:
        """One hash of all weight files (name and hash of each), for the resume fingerprint."""
        joined = "\n".join(f"{name}:{digest}" for name, digest in sorted(self.weights.items()))
        return hashlib.sha256(joined.encode()).hexdigest()

    def report_section(self) -> dict[str, Any]:
        section: dict[str, Any] = {"source": self.source, "location": self.location}
        if self.revision is not None:
            section["revision"] = self.revision
        if self.commit is not None:
            section["commit"] = self.commit
        section["weights_sha256"] = dict(sorted(self.weights.items()))
        if self.files:
            section["files_sha256"] = dict(sorted(self.files.items()))
        section.update(self.extra)
        return section


def weight_files(folder: Path) -> list[Path]:
    """Every weight file directly inside `folder` (sharded checkpoints have several)."""
    return sorted(
        p for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(WEIGHT_SUFFIXES)
    )


def hash_files(paths: list[Path], root: Path) -> dict[str, str]:
    """name relative to `root` -> sha256, following the cache's symlinks to the blobs."""
    return {str(p.relative_to(root)): sha256_file(p) for p in paths}
