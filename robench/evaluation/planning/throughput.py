"""Model passes per second measured by real runs, saved per device, for `--dry-run`'s wall-time
estimate (docs/cost.md: the unit, the file and its location, what a figure names).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from robench.results.report.schema import Report

logger = logging.getLogger(__name__)

CACHE_ENV = "ROBENCH_CACHE_DIR"
FILE_NAME = "throughput.json"


@dataclass(frozen=True)
class Throughput:
    """Passes per second one run on `device` reached, and what it ran."""

    device: str
    passes_per_s: float  # forward 1, forward and backward 3, per second of the results' time
    passes: int
    wall_time_s: float
    model: str
    suite: str
    created_utc: str


def throughput_path() -> Path:
    """Where the figures are saved (`$ROBENCH_CACHE_DIR`, else the user's cache)."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given).expanduser() / FILE_NAME
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "robench" / FILE_NAME


def measured(report: Report) -> Throughput | None:
    """The report's throughput: its counted passes over its results' wall time; None when
    nothing was counted (every result resumed whole) or no time was measured."""
    costed = [r for r in report.results if r.cost is not None]
    passes = sum(r.cost.forward + 2 * r.cost.backward for r in costed if r.cost is not None)
    seconds = sum(r.wall_time_s for r in costed)
    if passes == 0 or seconds <= 0:
        return None
    return Throughput(
        device=report.environment.device,
        passes_per_s=passes / seconds,
        passes=passes,
        wall_time_s=round(seconds, 3),
        model=report.model.name,
        suite=report.suite.name,
        created_utc=report.created_utc,
    )


def _saved() -> dict[str, Any]:
    try:
        loaded = json.loads(throughput_path().read_text())
    except (OSError, ValueError):  # none yet, or unreadable: start again
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _by_model(entry: Any) -> dict[str, Any]:
    """A device's figures by model name; a file of the first format (one figure per device,
    before 2026-11-28) gives its one figure under its model."""
    if not isinstance(entry, dict):
        return {}
    if "passes_per_s" in entry:
        return {str(entry.get("model")): entry}
    return entry


def record(report: Report) -> Throughput | None:
    """Save the report's throughput for its device and model, replacing the figure of an
    earlier run of that model there (the file is a cache: a failure to write it is logged,
    never an error of the run)."""
    found = measured(report)
    if found is None:
        return None
    figures = _saved()
    figures[found.device] = _by_model(figures.get(found.device)) | {found.model: asdict(found)}
    path = throughput_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch = path.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(figures, indent=2, sort_keys=True))
        scratch.replace(path)  # atomic: two runs never leave a torn file
    except OSError as exc:
        logger.warning("throughput not saved to %s: %s", path, exc)
        return None
    return found


def saved_throughput(device: str, model: str | None = None) -> Throughput | None:
    """The figure saved for `model` on `device` (the report's device string), else the latest
    figure of another model there, if a run measured one. Passes per second depend on the
    model as much as on the device, so a figure of `model` itself is preferred."""
    figures = []
    for entry in _by_model(_saved().get(device)).values():
        try:
            figures.append(Throughput(**entry))
        except TypeError:  # written by another version: as if none was saved
            continue
    own = [figure for figure in figures if figure.model == model]
    return max(own or figures, key=lambda figure: figure.created_utc, default=None)
