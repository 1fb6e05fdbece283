"""Find a Hugging Face Hub repository in the local cache, never on the network (docs/models.md).

The layout is huggingface_hub's (https://huggingface.co/docs/huggingface_hub/guides/manage-cache):
`models--ORG--NAME/refs/REVISION` holds a commit hash, `models--ORG--NAME/snapshots/COMMIT/`
that commit's files. Reading it here, rather than through huggingface_hub, keeps the lookup
offline by construction and lets a test point `HF_HOME` at a folder it builds.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from robench._core.errors import ConfigError

# A repo id as the Hub spells it: NAME or ORG/NAME, letters, digits, `-`, `_`, `.`.
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class CachedRepo:
    """A repository's files at one commit, as found in the local cache."""

    repo_id: str  # ORG/NAME
    revision: str  # what was asked for: a branch, tag or commit ("main" by default)
    commit: str  # the snapshot folder's name: the commit hash
    folder: Path  # the snapshot folder


def hub_cache_dir() -> Path:
    """The cache folder huggingface_hub uses, from the environment as it is now."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def find_cached_repo(spec: str) -> CachedRepo:
    """The snapshot of `ORG/NAME[@REV]` in the local cache; ConfigError when it is absent."""
    repo_id, _, revision = spec.partition("@")
    revision = revision or "main"  # no `@`: the main branch
    if not _REPO_ID.match(repo_id):
        raise ConfigError(
            f"{repo_id!r} is not a Hugging Face repo id; give it as ORG/NAME (optionally "
            "@REVISION), or the path of a local model folder."
        )
    cache = hub_cache_dir()
    repo_dir = cache / ("models--" + repo_id.replace("/", "--"))
    commit = _resolve_commit(repo_dir, revision)
    folder = repo_dir / "snapshots" / commit if commit else None
    if folder is None or not folder.is_dir():
        at = "" if revision == "main" else f" at revision {revision!r}"
        raise ConfigError(
            f"{repo_id}{at} is not in the local Hugging Face cache ({cache}; set HF_HOME to "
            f"use another) and robench never downloads; on a connected machine run `hf "
            f"download {repo_id}"
            + ("" if revision == "main" else f" --revision {revision}")
            + "` (or `huggingface-cli download`) with the same HF_HOME, then copy the cache."
        )
    return CachedRepo(repo_id=repo_id, revision=revision, commit=commit or "", folder=folder)


def _resolve_commit(repo_dir: Path, revision: str) -> str | None:
    """A branch or tag read from refs/, or a commit hash named directly."""
    ref = repo_dir / "refs" / revision
    if ref.is_file():
        return ref.read_text(encoding="utf-8").strip()
    if _COMMIT.match(revision):
        return revision
    return None
