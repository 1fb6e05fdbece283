"""The valid range of every numeric option of `robench train` and `robench eval`, in one table.

A value outside its range (a batch size of 0, a negative learning rate, `nan`) is refused in
one sentence, exit 2, before the command opens a model or writes anything: left to the
library it can train forever, divide by zero or fail deep inside torch. The command line
(robench/cli/_option_table.py) and the Python API (robench/api/_keywords.py) check against it,
and `check_range` an option parsed from text (`--sanity-eps 8/255`) once parsed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from robench._core.errors import ConfigError

# Larger counts than this are not a request anyone means, and overflow torch's int64 sizes.
MAX_COUNT = 2**31 - 1
MAX_SEED = 2**63 - 1  # torch's generator takes a 64-bit seed


@dataclass(frozen=True)
class Range:
    """Finite values from `low` to `high`; `*_open` leaves that end out."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    example: str = "1"  # a valid value, shown in the fix

    def __contains__(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        low_ok = self.low is None or (value > self.low if self.low_open else value >= self.low)
        high_ok = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return low_ok and high_ok

    def describe(self) -> str:
        low = None if self.low is None else f"{'>' if self.low_open else '>='} {_show(self.low)}"
        high = (
            None if self.high is None else f"{'<' if self.high_open else '<='} {_show(self.high)}"
        )
        return " and ".join(part for part in (low, high) if part) or "a finite number"


def _show(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def _count(low: int, example: str) -> Range:
    return Range(low, MAX_COUNT, example=example)


POSITIVE = Range(0, low_open=True, example="0.001")

# Flag -> valid range. One row per option, shared by the commands that take it.
OPTION_RANGES: dict[str, Range] = {
    "--batch-size": _count(1, "64"),
    "--workers": _count(0, "2"),  # 0: load in the main process
    "--seed": Range(0, MAX_SEED, example="0"),
    "--limit": _count(1, "500"),
    "--target-halfwidth": Range(0, 0.5, example="0.01"),  # 0: every sample, in random order
    "--train-limit": _count(1, "2000"),
    "--val-limit": _count(1, "2000"),
    "--max-steps": _count(1, "300"),
    "--val-every": _count(1, "200"),
    "--warmup-steps": _count(0, "100"),
    "--epochs": Range(0, 1e6, low_open=True, example="1"),
    "--lr": POSITIVE,
    "--weight-decay": Range(0, example="0.05"),
    "--label-smoothing": Range(0, 1, high_open=True, example="0.1"),
    "--clip-grad": Range(0, example="1.0"),  # 0: no clipping
    "--target-length": _count(1, "256"),
    "--context": _count(0, "0"),
    "--vocab-min-count": _count(1, "3"),
    "--vocab-size": _count(2, "10000"),  # room for <eos> and <unk>
    "--num-classes": _count(1, "1000"),
    "--crop-pct": Range(0, 1, low_open=True, example="0.875"),
    "--input-size": Range(1, 8192, example="3,224,224"),  # each of C, H and W
    "--std": Range(0, low_open=True, example="0.229,0.224,0.225"),  # each channel's
    "--mean": Range(example="0.485,0.456,0.406"),
    "--sanity-eps": Range(0, low_open=True, example="8/255"),
    "--aux-loss-weight": Range(0, example="0.01"),  # 0: no load balancing
    "--noise-sd": Range(0, example="0.25"),  # 0: no Gaussian noise augmentation
    "--eps": Range(0, 1, low_open=True, example="0.1"),  # adversarial training, pixel units
    "--steps": _count(1, "10"),
    "--step-size": Range(0, 1, low_open=True, example="0.025"),
    "--beta": Range(0, low_open=True, example="6"),
}


def flag_of(parameter: str) -> str:
    """`batch_size` -> `--batch-size`."""
    return "--" + parameter.replace("_", "-")


def check_range(flag: str, value: float | Iterable[float] | None, shown: Any = None) -> None:
    """Refuse `value` (each item of a list) outside `flag`'s row; None means not given."""
    if value is None:
        return
    row = OPTION_RANGES[flag]
    items = [value] if isinstance(value, int | float) else list(value)
    if all(item in row for item in items):
        return
    given = value if shown is None else shown
    each = "each value " if len(items) > 1 else ""
    raise ConfigError(
        f"{flag} {given} is out of range: expected {each}{row.describe()}; pass a value in "
        f"range, e.g. {flag} {row.example}."
    )
