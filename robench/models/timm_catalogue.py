"""timm's model names and pretrained tags, readable without importing timm or torch.

`robench eval` answers a misspelt MODEL before torch loads
(`robench/evaluation/checks/preflight.py`), which needs every name timm would accept. Importing
timm costs seconds of CPU time (it imports torch), so the names are kept in
`timm_catalogue.json` beside this module, written by `build_catalogue()` from the timm that
`constraints.txt` pins. The file records that timm's version: under another timm the catalogue
is not trusted and names are checked the slow way, by timm itself. `tests/test_preflight.py`
fails when the file and the pinned timm disagree; regenerate it with

    python -c "from robench.models.timm_catalogue import save_catalogue; save_catalogue()"
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

CATALOGUE_PATH = Path(__file__).with_name("timm_catalogue.json")
_HUB_PREFIX = "timm/"  # the Hub repo of most tags is timm/ARCH.TAG; only the others are stored


@dataclass(frozen=True)
class TimmCatalogue:
    """The architectures timm registers (robench's zoo left out) and its pretrained tags."""

    timm_version: str
    architectures: frozenset[str]
    # ARCH.TAG -> the Hugging Face Hub repo of its weights ("" when timm has none there).
    pretrained: dict[str, str]

    def names(self) -> set[str]:
        return set(self.architectures) | set(self.pretrained)


def installed_timm_version() -> str | None:
    """The installed timm's version from its metadata (no import), None without timm."""
    try:
        return metadata.version("timm")
    except metadata.PackageNotFoundError:
        return None


@cache
def trusted_catalogue() -> TimmCatalogue | None:
    """The catalogue when it was written from the installed timm, else None (check by timm)."""
    if not CATALOGUE_PATH.is_file():
        return None
    raw: dict[str, Any] = json.loads(CATALOGUE_PATH.read_text(encoding="utf-8"))
    if raw.get("timm_version") != installed_timm_version():
        return None
    tags = raw["pretrained"]
    return TimmCatalogue(
        timm_version=raw["timm_version"],
        architectures=frozenset(raw["architectures"]),
        pretrained={tag: tags[tag] if tags[tag] is not None else _HUB_PREFIX + tag for tag in tags},
    )


def build_catalogue() -> dict[str, Any]:
    """The catalogue of the installed timm (imports timm, and so torch), as stored."""
    import timm
    from timm.models import get_pretrained_cfg

    from robench.models.zoo_names import ZOO_MODELS

    pretrained: dict[str, str | None] = {}
    for tag in timm.list_models(pretrained=True):
        cfg = get_pretrained_cfg(tag)
        hub_id = (cfg.hf_hub_id if cfg is not None else None) or ""
        pretrained[tag] = None if hub_id == _HUB_PREFIX + tag else hub_id  # None: the usual repo
    architectures = sorted(set(timm.list_models()) - set(ZOO_MODELS))
    return {"timm_version": timm.__version__, "architectures": architectures,
            "pretrained": pretrained}  # fmt: skip


def save_catalogue(path: Path = CATALOGUE_PATH) -> Path:
    """Write `build_catalogue()` to `path` (one name per line, so diffs stay readable)."""
    path.write_text(json.dumps(build_catalogue(), indent=0, sort_keys=True) + "\n", "utf-8")
    return path
