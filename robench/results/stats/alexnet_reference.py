"""AlexNet's ImageNet-C errors: the normaliser of mCE (Hendrycks & Dietterich, ICLR 2019).

The numbers ship as package data in `reference/`, each CSV with its `#` provenance lines
(docs/formats.md, "Aggregates"): the errors per corruption and severity, and per corruption
its set (15 `standard`, 4 `extra`) and the `clean` row. Values are read keyed by corruption
name and severity, never by position.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

from robench._core.errors import RobenchError

_BY_SEVERITY = "imagenet_c_alexnet_errors_by_severity.csv"
_MEANS = "imagenet_c_alexnet_errors.csv"


@dataclass(frozen=True)
class AlexNetReference:
    """AlexNet's ImageNet-C errors (fractions), keyed by name and severity."""

    errors: dict[tuple[str, int], float]  # (corruption, severity) -> top-1 error
    sets: dict[str, list[str]]  # "standard" -> the 15 mCE corruptions, "extra" -> the 4 others
    clean_error: float  # clean ImageNet validation top-1 error

    def severities(self, corruption: str) -> list[int]:
        return sorted(s for c, s in self.errors if c == corruption)


def _rows(name: str) -> list[dict[str, str]]:
    """The data rows of a shipped CSV, its `#` provenance lines skipped."""
    text = (resources.files("robench.results.stats") / "reference" / name).read_text("utf-8")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return list(csv.DictReader(lines))


@functools.cache
def alexnet_reference() -> AlexNetReference:
    """The shipped AlexNet reference (read once)."""
    try:
        errors = {
            (row["corruption"], int(row["severity"])): float(row["alexnet_error"])
            for row in _rows(_BY_SEVERITY)
        }
        sets: dict[str, list[str]] = {}
        for row in _rows(_MEANS):
            sets.setdefault(row["set"], []).append(row["corruption"])
        clean = next(float(r["alexnet_error"]) for r in _rows(_MEANS) if r["set"] == "clean")
    except (OSError, KeyError, ValueError, StopIteration) as exc:  # a broken installation
        raise RobenchError(
            f"the shipped AlexNet ImageNet-C reference is unreadable ({exc!r}); reinstall robench."
        ) from None
    return AlexNetReference(
        errors=errors,
        sets={name: sets.get(name, []) for name in ("standard", "extra")},
        clean_error=clean,
    )
